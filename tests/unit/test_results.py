"""What a certifier takes away: every run's archive (report, page, JUnit, diagnostics with Secret values redacted),
`results` summarizing a run from its directory or its archive, `verify` reading archives too, and `verify --gate`
for a gate's run whose cluster cannot serve every claim."""
from __future__ import annotations

import base64
import tarfile

import yaml

from rayconformance.__main__ import main
from rayconformance.report import archive, certify

TESTS = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """A RayCluster comes up."""


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    """A RayCluster suspends."""
    assert False, "expected RayClusterSuspended=True, observed False"


@pytest.mark.feature("RayClusterGPUWorkerGroups")
def test_gpu(cluster):
    """A GPU worker group comes up."""
    pytest.skip("no Node offers nvidia.com/gpu")


@pytest.mark.feature("RayJobK8sJobMode")
def test_job(cluster):
    """A RayJob runs."""
'''
CLAIMS = "--supported-features=RayClusterProvisioning,RayClusterSuspend,RayClusterGPUWorkerGroups"


def run(suite, tests: str = TESTS) -> None:
    suite.tests(tests)
    suite.run(CLAIMS)


def out_of(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(map(str, args)))
    out, err = capsys.readouterr()
    return rc, out, err


def test_every_run_writes_its_archive_beside_its_directory(suite):
    run(suite)
    path = archive.path_for(suite.run_dir)
    assert path.name == "unit.tar.gz" and path.is_file()
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
    assert {"unit/conformance-report.yaml", "unit/report.html", "unit/junit.xml"} <= names, names
    assert not any(n.endswith(("kubeconfig", "needs.json", "fake-calls")) for n in names), names


def test_the_archive_holds_diagnostics_with_secret_values_redacted(tmp_path):
    run_dir = tmp_path / "reports" / "r1"
    (run_dir / "diagnostics" / "t").mkdir(parents=True)
    (run_dir / "conformance-report.yaml").write_text("tests: []\n")
    (run_dir / "kubeconfig").write_text("token: hunter2\n")
    secret = {"kind": "Secret", "metadata": {"name": "redis"}, "data": {"password": base64.b64encode(b"pw").decode()}}
    (run_dir / "diagnostics" / "t" / "secrets.yaml").write_text(yaml.safe_dump(secret))
    (run_dir / "diagnostics" / "t" / "head.log").write_text("started\n")
    with tarfile.open(archive.write(run_dir)) as tar:
        names = set(tar.getnames())
        held = yaml.safe_load(tar.extractfile("r1/diagnostics/t/secrets.yaml").read())
    assert names == {"r1/conformance-report.yaml", "r1/diagnostics/t/secrets.yaml", "r1/diagnostics/t/head.log"}
    assert held["data"] == {"password": "<redacted>"}


def test_results_summarizes_a_run_from_its_directory_or_its_archive(suite, capsys):
    run(suite)
    rc, from_dir, _ = out_of(capsys, "results", suite.run_dir)
    assert rc == 0
    lines = from_dir.splitlines()
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in lines if line.startswith("  Ray")}
    assert rows == {"RayCluster": "success (1 passed) failure (1 failed, 1 skipped)",
                    "RayJob": "untested (1 unsupported) untested (no tests)",
                    "RayService": "untested (no tests) untested (no tests)",
                    "RayCronJob": "untested (no tests) untested (no tests)"}, from_dir
    assert "  failed: RayClusterSuspend in suspend" in lines and "  skipped: RayClusterGPUWorkerGroups in gpu" in lines
    assert "not claimed, so not run (unsupported, no skip of the verdict): 1 test(s) of RayJobK8sJobMode (1)" in lines
    at = lines.index("failures (1):")
    assert lines[at + 1].startswith("  suspend [RayClusterSuspend]"), lines  # (overloaded, on a busy machine)
    assert lines[at + 2] == "    AssertionError: expected RayClusterSuspended=True, observed False", lines
    rc, from_archive, _ = out_of(capsys, "results", archive.path_for(suite.run_dir))
    assert rc == 0 and f"archive: {archive.path_for(suite.run_dir)} (its files under unit/" in from_archive
    assert from_archive.splitlines()[:12] == [line.replace(str(suite.run_dir), "unit") for line in lines[:12]]


def test_results_of_what_is_no_run_is_one_line(tmp_path, capsys):
    (tmp_path / "x.tar.gz").write_bytes(b"not gzip")
    for path, says in [(tmp_path / "missing", "no run directory"), (tmp_path / "x.tar.gz", "not a readable run "
                                                                                             "archive"),
                       (tmp_path, "no report at")]:
        rc, out, err = out_of(capsys, "results", path)
        assert rc == 1 and not out and len(err.splitlines()) == 1 and says in err, (path, err)


def test_verify_takes_an_archive_or_a_report_file_and_names_the_suite_release(suite, capsys):
    run(suite, TESTS.replace('    assert False, "expected RayClusterSuspended=True, observed False"\n', "")
        .replace('    pytest.skip("no Node offers nvidia.com/gpu")\n', ""))
    for given in (suite.run_dir, archive.path_for(suite.run_dir), suite.run_dir / "conformance-report.yaml"):
        rc, out, _ = out_of(capsys, "verify", given)
        assert rc == 0 and out.startswith(f"{given}: verified; made with suite "), out


def test_a_gate_run_verifies_intact_with_its_uncertified_claims_listed(suite, capsys):
    """A kind run skips the tests its cluster cannot serve (no TPU): no certification, but an intact report that
    gates; a failed test still fails the gate."""
    run(suite, TESTS.replace('    assert False, "expected RayClusterSuspended=True, observed False"\n', ""))
    assert certify.verify(suite.run_dir) == ["claimed feature RayClusterGPUWorkerGroups skipped in gpu"]
    rc, out, _ = out_of(capsys, "verify", "--gate", suite.run_dir)
    assert rc == 0, out
    assert out.splitlines()[0] == f"{suite.run_dir}: not certified: claimed feature RayClusterGPUWorkerGroups " \
                                  "skipped in gpu"
    assert out.splitlines()[1].startswith(f"{suite.run_dir}: intact, nothing failed (a gate, not a certification)")
    run(suite)
    rc, out, _ = out_of(capsys, "verify", "--gate", suite.run_dir)
    assert rc == 1 and f"{suite.run_dir}: test suspend failed" in out.splitlines(), out


def test_merge_takes_the_shards_archives_as_ci_downloads_them(suite, tmp_path, capsys):
    from .test_shards import sharded_runs, verdicts

    reports = sharded_runs(suite)
    rc, out, err = out_of(capsys, "merge", reports / "s1.tar.gz", reports / "s2.tar.gz", "--out", tmp_path / "merged")
    assert rc == 0, err
    assert verdicts(tmp_path / "merged") == verdicts(reports / "full")
    rc, out, _ = out_of(capsys, "verify", tmp_path / "merged.tar.gz")
    assert rc == 0 and "verified" in out, out



def test_a_published_report_of_scheme_1_is_shown_counted_both_ways(tmp_path, capsys):
    """The published v1.6.1 run counted unsupported tests as skips (Extended partial); counted apart it succeeds.
    A feature this suite's list no longer has leaves the report as it was counted."""
    import shutil

    from rayconformance.report.publish import PUBLISHED

    rc, out, _ = out_of(capsys, "results", PUBLISHED / "kuberay" / "v1.6.1")
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines() if line.startswith("  Ray")}
    assert rc == 0 and rows["RayCluster"] == "success (3 passed) success (56 passed, 26 unsupported)", out
    assert "  the report itself, counted by statistics scheme 1 (unsupported tests as skips), says: RayCluster Core " \
           "success, Extended partial;" in out
    copy = tmp_path / "v1.6.1"
    shutil.copytree(PUBLISHED / "kuberay" / "v1.6.1", copy)
    edit_report = copy / "conformance-report.yaml"
    data = yaml.safe_load(edit_report.read_text())
    data["tests"][0]["features"] = ["AFeatureSinceRenamed"]
    edit_report.write_text(yaml.safe_dump(data, sort_keys=False))
    rc, out, _ = out_of(capsys, "results", copy)
    assert rc == 0 and "Extended partial" not in out and "partial (56 passed, 26 skipped)" in out, out


def test_claims_a_narrowed_selection_did_not_test_are_one_line(suite):
    run(suite, TESTS.replace('    assert False, "expected RayClusterSuspended=True, observed False"\n', "")
        .replace('    pytest.skip("no Node offers nvidia.com/gpu")\n', ""))
    report = yaml.safe_load((suite.run_dir / "conformance-report.yaml").read_text())
    report["operator"]["claimedFeatures"] += ["RayJobSuspend", "RayJobRetries", "RayJobDeadlines", "RayJobHTTPMode",
                                              "RayJobTTLAfterFinished", "RayJobValidation"]
    report["selection"] = {"full": False, "narrowedBy": ["--run-test"]}
    assert certify.claim_problems(report) == [
        "6 claimed features have no test in the report (the selection was narrowed by --run-test): RayJobDeadlines, "
        "RayJobHTTPMode, RayJobRetries, RayJobSuspend, RayJobTTLAfterFinished, ...",
        "Core test job of resource RayJob skipped"]  # claiming RayJob features makes its Core tests required
