"""The version matrix (rayconformance.matrix): planning (profiles x Ray versions, one-line errors), the report
across recorded runs, and what each run is told (provider, cluster, the shared cluster to attach to)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from rayconformance.matrix import MatrixError, __main__ as cli, report, run

DATA = Path(__file__).parent / "data" / "matrix"


def recorded(tmp_path: Path, name: str, profile: str, ray: str, tests: list[tuple], version: str = "v1") -> Path:
    """A run directory with a conformance report of the suite's shape: tests as (name, features, outcome, reason)."""
    d = tmp_path / name
    d.mkdir()
    report = {"apiVersion": "rayconformance.io/v1alpha1", "kind": "RayConformanceReport", "runId": name,
              "operator": {"profile": profile, "featureGates": {}, "rayVersion": ray, "version": version},
              "implementation": {"version": version}, "wallSeconds": 100.0, "resources": [],
              "tests": [{"name": n, "features": f, "outcome": o, **({"reason": r} if r else {})}
                        for n, f, o, r in tests]}
    (d / "conformance-report.yaml").write_text(yaml.safe_dump(report))
    return d


UNSUPPORTED = "unsupported feature(s): RayJobValidation (not claimed by profile kuberay-v1.4.2)"


def test_report_outcomes_differences_and_contradictions(tmp_path):
    a = recorded(tmp_path, "a", "kuberay-v1.4.2", "2.60.0", [
        ("provisioning", ["RayClusterProvisioning"], "passed", None),
        ("invalid_rayjob", ["RayJobValidation"], "skipped", UNSUPPORTED),
        ("job_completes", ["RayJobK8sJobMode"], "failed", "RayJob never SUCCEEDED: observed Running"),
    ])
    b = recorded(tmp_path, "b", "kuberay-v1.6.1", "2.60.0", [
        ("provisioning", ["RayClusterProvisioning"], "passed", None),
        ("invalid_rayjob", ["RayJobValidation"], "passed", None),
        ("job_completes", ["RayJobK8sJobMode"], "passed", None),
    ])
    r = report.build(report.cells_from_runs([a, b]), "m1")
    cols = [c["column"] for c in r["columns"]]
    assert cols == ["kuberay-v1.4.2@2.60.0", "kuberay-v1.6.1@2.60.0"]
    tests = {t["name"]: t for t in r["tests"]}
    assert tests["invalid_rayjob"]["outcomes"] == {cols[0]: "unsupported", cols[1]: "passed"}
    assert tests["job_completes"]["reasons"] == {cols[0]: "RayJob never SUCCEEDED: observed Running"}
    feats = {f["name"]: f["results"] for f in r["features"]}
    assert feats["RayJobValidation"][cols[0]] == {"claimed": False, "verdict": "unsupported"}
    assert feats["RayJobValidation"][cols[1]] == {"claimed": True, "verdict": "passed"}
    # differences: a verdict or a claim that is not the same in every column
    assert {d["feature"] for d in r["differences"]} == {"RayJobValidation", "RayJobK8sJobMode"}
    # the one contradiction: v1.4.2 claims K8sJobMode and its test failed
    assert r["contradictions"] == [{"column": cols[0], "feature": "RayJobK8sJobMode", "claimed": True,
                                    "verdict": "failed", "tests": ["job_completes"]}]
    y, h = report.write(r, tmp_path / "out")
    assert yaml.safe_load(y.read_text())["kind"] == "RayConformanceMatrix"
    text = h.read_text()
    assert "kuberay-v1.4.2@2.60.0" in text and "RayJobK8sJobMode is claimed but failed" in text


def test_unclaimed_feature_passing_is_a_contradiction_and_a_run_without_report_fails_its_claims(tmp_path):
    a = recorded(tmp_path, "a", "kuberay-v1.4.2", "2.60.0", [
        ("invalid_rayjob", ["RayJobValidation"], "passed", None),  # run with --all-features
    ])
    cells = report.cells_from_runs([a])
    broken = report.Cell("kuberay-v1.5.1", "2.46.0", claims=("RayClusterProvisioning",),
                         error="no report (pytest exit 1): operator not ready")
    r = report.build(cells + [broken], "m2")
    assert {"column": "kuberay-v1.4.2@2.60.0", "feature": "RayJobValidation", "claimed": False,
            "verdict": "passed", "tests": ["invalid_rayjob"]} in r["contradictions"]
    assert {"column": "kuberay-v1.5.1@2.46.0", "feature": "RayClusterProvisioning", "claimed": True,
            "verdict": "error", "tests": [], "error": "no report (pytest exit 1): operator not ready"} in r["contradictions"]
    assert r["tests"][0]["outcomes"]["kuberay-v1.5.1@2.46.0"] == "not-run"


def test_recorded_matrix_runs_give_the_recorded_verdicts(tmp_path):
    """Reports recorded from real runs (tests/unit/data/matrix): the matrix read back from them."""
    runs = sorted(p.parent for p in DATA.glob("*/conformance-report.yaml"))
    if not runs:
        pytest.skip("no recorded runs")
    expected = yaml.safe_load((DATA / "expected.yaml").read_text())
    r = report.build(report.cells_from_runs(runs, expected["claims"]), "recorded")
    assert [c["column"] for c in r["columns"]] == expected["columns"]
    got = {f["name"]: {c: v["verdict"] for c, v in f["results"].items()} for f in r["features"]}
    for feature, verdicts in expected["features"].items():
        assert got[feature] == verdicts, feature
    assert [(x["column"], x["feature"]) for x in r["contradictions"]] == \
        [tuple(x) for x in expected["contradictions"]]


def test_plan_default_all_and_listed_ray_versions():
    cells, skipped = run.plan(["kuberay-v1.6.1"], "")
    assert [c.column for c in cells] == ["kuberay-v1.6.1@2.60.0"] and skipped == []
    cells, _ = run.plan(["kuberay-v1.6.1", "kuberay-v1.5.1"], "all")
    assert [c.column for c in cells] == ["kuberay-v1.6.1@2.60.0", "kuberay-v1.6.1@2.46.0",
                                         "kuberay-v1.5.1@2.60.0", "kuberay-v1.5.1@2.46.0"]
    cells, skipped = run.plan(["kuberay-v1.6.1"], "2.46.0,2.99.0")
    assert [c.column for c in cells] == ["kuberay-v1.6.1@2.46.0"]
    assert skipped == ["kuberay-v1.6.1@2.99.0: not run, the profile supports Ray 2.60.0, 2.46.0"]
    assert "RayClusterProvisioning" in cells[0].claims


@pytest.mark.parametrize("profiles, ray, expected", [
    (["nope"], "", "operator profile 'nope' not found"),
    (["kuberay-v1.6.1"], "latest", "MATRIX_RAY: 'latest' is not a Ray release"),
    (["kuberay-v1.6.1"], "2.99.0", "nothing to run: no profile supports the Ray versions asked for"),
    (["none"], "", "operator profile none names no rayVersions; give MATRIX_RAY"),
])
def test_plan_bad_input_is_one_line(profiles, ray, expected):
    with pytest.raises(MatrixError) as e:
        run.plan(profiles, ray)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_cli_report_from_recorded_runs_and_bad_input(tmp_path, capsys):
    a = recorded(tmp_path, "a", "kuberay-v1.6.1", "2.60.0", [("provisioning", ["RayClusterProvisioning"], "passed", None)])
    assert cli.main(["report", str(a), "--out", str(tmp_path / "m"), "--matrix-id", "m"]) == 0
    assert (tmp_path / "m" / "matrix-report.yaml").is_file() and (tmp_path / "m" / "matrix.html").is_file()
    assert "0 contradiction(s)" in capsys.readouterr().out
    assert cli.main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "no conformance-report.yaml" in err and "\n" not in err
    assert cli.main(["run", "--profiles", "nope"]) == 2
    assert "operator profile 'nope' not found" in capsys.readouterr().err


def test_common_tests_compare_a_whole_suite_run_with_a_selection_on_the_tests_both_ran(tmp_path, capsys):
    whole = recorded(tmp_path, "whole", "kuberay-v1.7.0", "2.60.0",
                     [("provisioning", ["RayClusterProvisioning"], "passed", None),
                      ("suspend", ["RayServiceSuspend"], "passed", None)])
    some = recorded(tmp_path, "some", "kuberay-v1.4.2", "2.60.0",
                    [("provisioning", ["RayClusterProvisioning"], "passed", None)])
    assert cli.main(["report", str(whole), str(some), "--out", str(tmp_path / "m"), "--common-tests"]) == 0
    assert "1 test(s) common to every run" in capsys.readouterr().out
    r = yaml.safe_load((tmp_path / "m" / "matrix-report.yaml").read_text())
    assert [t["name"] for t in r["tests"]] == ["provisioning"] and r["differences"] == []


def test_a_test_that_also_needs_an_unclaimed_feature_does_not_contradict_the_claimed_one(tmp_path):
    run_ = recorded(tmp_path, "r", "kuberay-v1.5.1", "2.60.0",
                    [("head_loss[user]", ["RayClusterFailureConditions"], "passed", None),
                     ("head_loss[RayJob]", ["RayClusterFailureConditions", "RayClusterOwnedByRayJob"], "failed", "x")])
    r = report.build(report.cells_from_runs([run_]), "m")
    verdicts = {f["name"]: f["results"]["kuberay-v1.5.1@2.60.0"]["verdict"] for f in r["features"]}
    assert verdicts["RayClusterFailureConditions"] == "failed"  # the row shows what ran
    assert r["contradictions"] == []  # v1.5.1 claims FailureConditions, not OwnedByRayJob


def test_two_runs_of_one_column_stay_apart(tmp_path):
    a = recorded(tmp_path, "r1", "kuberay-v1.6.1", "2.60.0", [("provisioning", ["RayClusterProvisioning"], "passed", None)])
    b = recorded(tmp_path, "r2", "kuberay-v1.6.1", "2.60.0", [("provisioning", ["RayClusterProvisioning"], "failed", "x")])
    r = report.build(report.cells_from_runs([a, b]), "m")
    assert [c["column"] for c in r["columns"]] == ["kuberay-v1.6.1@2.60.0#r1", "kuberay-v1.6.1@2.60.0#r2"]
    assert r["tests"][0]["outcomes"] == {"kuberay-v1.6.1@2.60.0#r1": "passed", "kuberay-v1.6.1@2.60.0#r2": "failed"}


def test_a_partial_matrix_leaves_cells_not_yet_run_out_of_the_verdicts(tmp_path):
    a = recorded(tmp_path, "a", "kuberay-v1.4.2", "2.60.0", [("provisioning", ["RayClusterProvisioning"], "passed", None)])
    pending = report.Cell("kuberay-v1.6.2", "2.60.0", claims=("RayClusterProvisioning",))
    r = report.build(report.cells_from_runs([a]) + [pending], "partial")
    assert r["contradictions"] == []
    feats = {f["name"]: f["results"] for f in r["features"]}
    assert feats["RayClusterProvisioning"]["kuberay-v1.6.2@2.60.0"] == {"claimed": True, "verdict": "not-run"}
    report.write(r, tmp_path / "out")  # the HTML of a partial matrix renders


def test_targets_say_what_every_run_is_given(tmp_path):
    local, cls = run.target(None, None, None)
    assert cls.adoptable and local.suite_args() == ["--provider", "local", "--cluster", str(local.definition.path)]
    kind, cls = run.target("kind", "kind-gpu", None)
    assert not cls.adoptable and kind.suite_args() == ["--provider", "kind", "--cluster", str(kind.definition.path)]
    assert run.target("existing", None, None)[0].suite_args() == ["--provider", "existing"]
    (tmp_path / "kc").write_text("apiVersion: v1\n")
    attached, _ = run.target("local", "local-gpu", str(tmp_path / "kc"))
    assert attached.suite_args()[-2:] == ["--attach-kubeconfig", str(tmp_path / "kc")]
    for args, expected in [(("kind", None, str(tmp_path / "kc")), "--kubeconfig: provider kind cannot attach"),
                           (("local", None, str(tmp_path / "none")), "no such file"),
                           (("kind", "local-cpu", None), "is for provider 'local', not 'kind'")]:
        with pytest.raises(MatrixError) as e:
            run.target(*args)
        assert expected in str(e.value) and "\n" not in str(e.value)


class FakeSuite:
    """Stands in for `pytest conformance`: records each run's argv and writes the report a run would."""

    def __init__(self):
        self.argvs = []

    def __call__(self, argv, cwd, capture_output, text):
        self.argvs.append(argv)
        out, run_id = Path(argv[argv.index("--report-dir") + 1]), argv[argv.index("--run-id") + 1]
        profile, ray = argv[argv.index("--operator-profile") + 1], argv[argv.index("--ray-version") + 1]
        recorded(out, run_id, profile, ray, [("provisioning", ["RayClusterProvisioning"], "passed", None)])
        return subprocess.CompletedProcess(argv, 0, "1 passed", "")


class FakeBed:
    def __init__(self, calls, kubeconfig):
        self.calls, self.kubeconfig, self.cluster = calls, kubeconfig, None

    def up(self):
        self.calls.append("up")
        self.cluster = type("C", (), {"kubeconfig": self.kubeconfig, "bringup_seconds": 1.0})()
        return self.cluster

    def down(self):
        self.calls.append("down")


@pytest.mark.parametrize("provider", ["local", "kind"])
def test_a_shared_cluster_comes_up_once_and_each_run_attaches_to_it(tmp_path, monkeypatch, provider):
    suite, calls = FakeSuite(), []
    monkeypatch.setattr(run.subprocess, "run", suite)
    monkeypatch.setattr(run.providers, "build", lambda *a, **kw: FakeBed(calls, tmp_path / "bed.kubeconfig"))
    cells, skipped = run.plan(["kuberay-v1.6.1", "kuberay-v1.5.1"], "")
    where, cls = run.target(provider, None, None)
    path = run.run_matrix(cells, skipped, tmp_path / "m", "m", where, cls.adoptable, ["--core-only"], jobs=1)
    assert [c["summary"] for c in yaml.safe_load(path.read_text())["columns"]] == ["1 passed, 0 failed, 0 skipped"] * 2
    attach = ["--attach-kubeconfig", str(tmp_path / "bed.kubeconfig")]
    for argv in suite.argvs:
        assert argv[argv.index("--provider") + 1] == provider and "--core-only" in argv
        assert (attach == argv[argv.index("--attach-kubeconfig"):][:2]) if provider == "local" \
            else "--attach-kubeconfig" not in argv
    assert calls == (["up", "down"] if provider == "local" else [])
