"""Reproducing a run: the report records how it was run (`reproduce`), `reproduce --dry-run` builds the command that
runs that selection again (derived from the report when it was made before the section), and two runs' verdicts are
compared test by test."""
from __future__ import annotations

import copy
import shlex

import pytest
import yaml

from rayconformance import results
from rayconformance.__main__ import main
from rayconformance.report import certify, page, reproduce
from rayconformance.run import merge, recipe

from .test_certify import CLAIMS, PASSING

PUBLISHED = certify.ROOT / "reports" / "published" / "kuberay" / "v1.7.0"


def out_of(capsys, *args) -> tuple[int, list[str], str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err


def dry_run_argv(capsys, *args) -> tuple[list[str], list[str]]:
    """The argv `reproduce --dry-run` prints, and its notes."""
    rc, out, err = out_of(capsys, "reproduce", *args, "--dry-run")
    assert rc == 0, err
    ran = [line for line in out if line.startswith("reproduce: would run")]
    assert len(ran) == 1, out
    return shlex.split(ran[0].split(": ", 2)[2]), [line for line in out if line not in ran]


def test_a_run_records_its_command_and_selection_and_its_page_shows_them(suite):
    suite.tests(PASSING)
    assert suite.run(CLAIMS, "-k", "provisioning or suspend", "--skip-tests", "suspend").ret == 0
    report = suite.report()
    section = report["reproduce"]
    assert section["command"].startswith("python -m pytest conformance ") and \
        "-k 'provisioning or suspend'" in section["command"], section
    assert section["operatorProfile"] == "kuberay-v1.6.1" and section["rayVersion"] == report["operator"]["rayVersion"]
    assert section["suiteVersion"] == report["suiteVersion"] and section["provider"] == report["cluster"]["provider"]
    assert section["selection"] == {"paths": ["conformance"], "keyword": "provisioning or suspend",
                                    "skipTests": ["suspend"],
                                    "supportedFeatures": ["RayClusterProvisioning", "RayClusterSuspend"]}
    assert certify.schema_problems(report) == []
    html = (suite.run_dir / "report.html").read_text()
    assert "<h2>Reproduce</h2>" in html and "provisioning or suspend" in html
    assert f"reproduce: {section['command']}" in results.text(suite.run_dir).splitlines()


def test_dry_run_prints_the_command_of_the_recorded_selection_and_runs_nothing(suite, tmp_path, capsys):
    suite.tests(PASSING)
    assert suite.run(CLAIMS, "-k", "provisioning or suspend", "--skip-tests", "suspend").ret == 0
    argv, notes = dry_run_argv(capsys, suite.run_dir, "--out", tmp_path / "again")
    assert argv[1:4] == ["-m", "pytest", "conformance"], argv
    pairs = dict(zip(argv[4::2], argv[5::2]))  # every option after the path takes a value here
    report = suite.report()
    assert pairs["--operator-profile"] == "kuberay-v1.6.1" and pairs["--provider"] == report["cluster"]["provider"]
    assert pairs["--ray-version"] == report["operator"]["rayVersion"]
    assert pairs["-k"] == "provisioning or suspend" and pairs["--skip-tests"] == "suspend"
    assert pairs["--supported-features"] == "RayClusterProvisioning,RayClusterSuspend"
    assert pairs["--report-dir"] == str(tmp_path / "again") and pairs["--run-id"].startswith("reproduce-unit-")
    assert not (tmp_path / "again").exists()


def test_a_shard_is_run_again_as_that_shard_or_by_its_tests_when_its_split_is_not_here(tmp_path):
    report = {"runId": "s1", "tests": [{"nodeid": "conformance/a/test_x.py::test_a", "name": "a"}]}
    durations = tmp_path / "durations.yaml"
    durations.write_text("{}")
    section = {"operatorProfile": "kuberay-v1.7.0", "provider": "local", "cluster": "local-gpu", "workers": "auto",
               "selection": {"paths": ["conformance"], "shard": "1/2", "durationsFrom": str(durations)}}
    argv, notes = reproduce.command(section, report, "r", tmp_path, python="python")
    assert argv[:6] == ["python", "-m", "pytest", "conformance", "-n", "auto"] and not notes, argv
    assert argv[argv.index("--shard"):argv.index("--shard") + 4] == ["--shard", "1/2", "--durations-from",
                                                                     str(durations)]
    durations.unlink()
    argv, notes = reproduce.command(section, report, "r", tmp_path, python="python")
    assert argv[3] == "conformance/a/test_x.py::test_a" and "--shard" not in argv, argv
    assert notes == [f"shard 1/2 was split by {durations}, which is not here: its 1 tests given by node id"]


def test_a_report_made_before_the_section_gets_a_derived_command(capsys):
    argv, notes = dry_run_argv(capsys, PUBLISHED)
    report = yaml.safe_load((PUBLISHED / "conformance-report.yaml").read_text())
    assert "reproduce" not in report
    assert notes[0].startswith("reproduce: the report has no reproduce section (made before it existed): derived "
                               "from the report: operatorProfile kuberay-v1.7.0, provider local, cluster local-gpu, "
                               f"rayVersion {report['operator']['rayVersion']}"), notes
    pairs = dict(zip(argv[4::2], argv[5::2]))
    assert argv[3] == "conformance" and pairs["--operator-profile"] == "kuberay-v1.7.0", argv
    assert pairs["--cluster"] == "local-gpu" and pairs["--ray-version"] == report["operator"]["rayVersion"]


def test_a_derived_selection_narrowed_by_an_unrecorded_value_names_its_tests(tmp_path):
    report = yaml.safe_load((PUBLISHED / "conformance-report.yaml").read_text())
    report["selection"] = {"full": False, "narrowedBy": ["-k", "--core-only"]}
    report["tests"][0]["reason"] = reproduce.SKIPPED_BY_OPTION
    section, notes = reproduce.derived(report)
    assert section["selection"]["paths"] == [t["nodeid"] for t in report["tests"]]
    assert section["selection"]["coreOnly"] is True
    assert section["selection"]["skipTests"] == [report["tests"][0]["name"]]
    assert notes[1] == f"narrowed by -k, whose value the report does not record: its {len(report['tests'])} tests " \
                       "given by node id"


def test_a_merged_run_is_run_again_as_one():
    shard = {"command": "python -m pytest conformance --shard 1/2", "operatorProfile": "p", "provider": "local",
             "selection": {"paths": ["conformance"], "shard": "1/2", "durationsFrom": "x"}}
    merged = merge.merged_recipe(shard, 2)
    assert merged["selection"] == {"paths": ["conformance"]} and merged["shardsMerged"] == 2
    assert reproduce.recipe({"reproduce": merged})[1] == ["a merged run of 2 shards, run as one"]


def verdict_report(outcomes: dict[str, str], claimed=("F",)) -> dict:
    return {"operator": {"claimedFeatures": list(claimed)},
            "tests": [{"nodeid": f"conformance/t.py::test_{n}", "name": n, "features": ["G" if n == "u" else "F"],
                       "outcome": o, **({"message": "expected Ready, observed Pending"} if o == "failed" else {})}
                      for n, o in outcomes.items()]}


def test_the_same_verdicts_are_one_line():
    a = verdict_report({"a": "passed", "b": "skipped", "u": "skipped"})
    lines, last = reproduce.differences(a, copy.deepcopy(a))
    assert lines == [] and last == "same verdicts: 3 tests (1 passed, 1 skipped, 1 unsupported)"


def test_each_differing_verdict_is_one_line():
    a = verdict_report({"a": "passed", "b": "passed", "c": "passed"})
    b = verdict_report({"a": "passed", "b": "failed", "d": "passed"})
    lines, last = reproduce.differences(a, b, "run1", "run2")
    assert lines == ["b: passed in run1, failed in run2 (expected Ready, observed Pending)",
                     "c: passed in run1, not run in run2", "d: not in run1, passed in run2"]
    assert last == "3 difference(s) in 4 tests"


def test_compare_with_two_recorded_runs_exits_by_their_verdicts(tmp_path, capsys):
    for name, outcomes in (("one", {"a": "passed", "b": "passed"}), ("two", {"a": "passed", "b": "failed"}),
                           ("three", {"a": "passed", "b": "passed"})):
        report = {**verdict_report(outcomes), "cluster": {"provider": "local"}}
        report["operator"]["profile"] = "kuberay-v1.7.0"
        (tmp_path / name).mkdir()
        (tmp_path / name / "conformance-report.yaml").write_text(yaml.safe_dump(report))
    rc, out, _ = out_of(capsys, "reproduce", tmp_path / "one", "--compare-with", tmp_path / "three")
    assert rc == 0 and out == ["same verdicts: 2 tests (2 passed)"], out
    rc, out, _ = out_of(capsys, "reproduce", tmp_path / "one", "--compare-with", tmp_path / "two")
    assert rc == 1 and out[-1] == "1 difference(s) in 2 tests" and len(out) == 2, out
    rc, out, err = out_of(capsys, "reproduce", tmp_path / "none", "--dry-run")
    assert rc == 1 and not out and len(err.splitlines()) == 1, err


def test_the_make_variables_are_read_from_makeflags(monkeypatch):
    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("MAKEFLAGS", "s -- JOBS=1 CONFORMANCE_ARGS=-k\\ autoscaler")
    assert recipe.make_variables() == "JOBS=1 CONFORMANCE_ARGS=-k\\ autoscaler"
    monkeypatch.delenv("MAKELEVEL")
    assert recipe.make_variables() is None
    assert recipe.workers_given(["conformance", "-n", "3"]) == "3" and recipe.workers_given(["-nauto"]) == "auto"


def test_a_page_without_the_section_says_how_to_derive_it():
    html = page.reproduce({"runId": "old"})
    assert "Not recorded" in html and "python -m rayconformance reproduce reports/old" in html


DAMAGED = {"a recorded section that is text": ({"reproduce": "x"}, "its reproduce is not a mapping"),
           "a recorded selection that is a list": ({"reproduce": {"command": "c", "selection": ["k"]}},
                                                   "its reproduce.selection is not a mapping"),
           "an operator that is text": ({"operator": "kuberay"}, "its operator is not a mapping"),
           "a test that is a number": ({"tests": [5]}, "test 1 of its list has no name or node id"),
           "a test without a node id": ({"tests": [{"name": "a", "outcome": "passed"}]},
                                        "test 1 of its list has no name or node id")}


@pytest.mark.parametrize("damage", DAMAGED)
def test_an_edited_or_damaged_report_is_one_line(tmp_path, capsys, damage):
    edit, said = DAMAGED[damage]
    report = {"operator": {"profile": "kuberay-v1.7.0"}, "cluster": {"provider": "local", "name": "local"},
              "tests": [{"name": "a", "nodeid": "conformance/x.py::test_a", "outcome": "passed"}], **edit}
    (tmp_path / "conformance-report.yaml").write_text(yaml.safe_dump(report))
    for args in (["--dry-run"], ["--compare-with", tmp_path]):
        rc, out, err = out_of(capsys, "reproduce", tmp_path, *args)
        assert rc == 1 and not out and err == f"reproduce: {tmp_path / 'conformance-report.yaml'}: {said} (edited " \
            "or damaged)\n", err
    (tmp_path / "conformance-report.yaml").write_bytes(b"\xff\xfe not text")
    rc, out, err = out_of(capsys, "reproduce", tmp_path, "--dry-run")
    assert rc == 1 and err.endswith(": no readable report (UnicodeDecodeError)\n"), err


def test_the_directory_is_recorded_relative_to_the_checkout(tmp_path):
    root = recipe.release.ROOT
    assert recipe.directory(root) == "." and recipe.directory(root / "conformance") == "conformance"
    assert recipe.directory(tmp_path) == str(tmp_path)


def test_a_tree_build_records_its_repository_ref_and_commit_for_another_machine(tmp_path):
    import subprocess
    from types import SimpleNamespace

    from rayconformance.operator import profiles, source_tree

    tree = tmp_path / "kuberay"
    (tree / "ray-operator").mkdir(parents=True)
    (tree / "ray-operator" / "go.mod").write_text(f"module {source_tree.MODULE}\n")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    profile = profiles.load("kuberay-v1.7.0")
    opts = SimpleNamespace(operator_tree_key=source_tree.tree_key(tree), provider="local", profile=profile)
    assert recipe.operator_source(opts) == {"repository": "https://github.com/ray-project/kuberay", "ref": "v1.7.0",
                                            "commit": commit}
    (tree / "ray-operator" / "go.mod").write_text(f"module {source_tree.MODULE}\n\ngo 1.24\n")
    assert recipe.operator_source(opts)["commit"] == commit  # as read at start, not again
    opts = SimpleNamespace(operator_tree_key=source_tree.tree_key(tree), provider="local", profile=profile)
    assert set(recipe.operator_source(opts)) == {"repository", "ref", "commit", "uncommittedChanges"}
    assert recipe.operator_source(SimpleNamespace(operator_tree_key=None)) is None
    notes: list[str] = []
    section = {"operatorTree": str(tmp_path / "gone"), "operatorSource": recipe.operator_source(opts)}
    assert reproduce.tree_args(section, notes) == []
    assert notes == [f"operator tree {tmp_path / 'gone'} is not here (the run built "
                     f"https://github.com/ray-project/kuberay at {commit[:12]}, with uncommitted changes): the run "
                     "uses --operator-tree or $RAYCONF_OPERATOR_TREE"], notes
