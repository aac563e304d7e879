"""Certification you can check: a report records digests of what ran, and `verify` finds what was changed."""
from __future__ import annotations

import shutil
import sys

import pytest
import yaml

from rayconformance.__main__ import main
from rayconformance.report import certify

PASSING = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """A RayCluster comes up."""


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    """A RayCluster suspends."""
'''
CLAIMS = "--supported-features=RayClusterProvisioning,RayClusterSuspend"


def run(suite) -> None:
    suite.tests(PASSING)
    result = suite.run(CLAIMS)
    assert result.ret == 0, result.stdout.lines


def test_a_fresh_report_verifies(suite, capsys):
    run(suite)
    report = suite.report()
    assert report["certification"]["suiteDigest"] == certify.suite_digest()
    assert report["operator"]["claimedFeatures"] == ["RayClusterProvisioning", "RayClusterSuspend"]
    assert certify.verify(suite.run_dir) == []
    capsys.readouterr()
    assert main(["verify", str(suite.run_dir)]) == 0
    assert "verified" in capsys.readouterr().out


CHANGES_THE_CHECKOUT = '''
import pytest

from rayconformance.report import certify, results as report


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """While this run goes, the checkout changes (a commit, an edited test): seen by the rest of the run."""
    certify.suite_digest = lambda *a: "sha256:changed-during-the-run"
    report.suite_version = lambda: "0.1.0+gchanged"
'''


def test_the_report_names_the_suite_as_it_was_when_the_run_started(suite):
    suite.tests(CHANGES_THE_CHECKOUT)
    result = suite.run_subprocess("--supported-features=RayClusterProvisioning")  # its own modules to change
    assert result.ret == 0, result.stdout.lines
    written = suite.report()
    assert written["certification"]["suiteDigest"] == certify.suite_digest(), written["certification"]
    assert written["suiteVersion"] != "0.1.0+gchanged", written["suiteVersion"]


def test_an_edited_outcome_fails_verify_in_one_line(suite, capsys):
    run(suite)
    path = suite.run_dir / "conformance-report.yaml"
    report = yaml.safe_load(path.read_text())
    report["tests"][1]["outcome"] = "passed" if report["tests"][1]["outcome"] != "passed" else "failed"
    path.write_text(yaml.safe_dump(report, sort_keys=False))
    problems = certify.verify(suite.run_dir)
    assert any("results checksum" in p for p in problems), problems
    capsys.readouterr()
    assert main(["verify", str(suite.run_dir)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(f"{suite.run_dir}: ") for line in lines), lines


def test_a_changed_test_file_fails_verify(suite, tmp_path):
    run(suite)
    copy = tmp_path / "suite"
    for part, _ in certify.SUITE_PARTS:
        shutil.copytree(certify.ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    test = next((copy / "conformance").rglob("test_*.py"))
    test.write_text(test.read_text() + "\n# changed\n")
    problems = certify.verify(suite.run_dir, root=copy)
    assert any(p.startswith("suite digest") for p in problems), problems


def test_failed_claims_and_core_tests_are_named(suite):
    suite.tests(PASSING.replace('"""A RayCluster comes up."""', 'assert False, "not provisioned"')
                .replace('"""A RayCluster suspends."""', 'pytest.skip("no room")'))
    suite.run(CLAIMS)
    problems = certify.verify(suite.run_dir)
    assert "Core test provisioning of resource RayCluster failed" in problems, problems
    assert "claimed feature RayClusterProvisioning failed in provisioning" in problems, problems
    assert "claimed feature RayClusterSuspend skipped in suspend" in problems, problems


def test_no_report_is_one_line(tmp_path):
    assert certify.verify(tmp_path) == [f"no report at {tmp_path / 'conformance-report.yaml'}: give the directory "
                                        "a run wrote (reports/<run-id>)"]


def test_a_test_skipped_for_an_unclaimed_feature_does_not_count_against_its_claimed_ones():
    report = {"operator": {"claimedFeatures": ["RayServiceZeroDowntimeUpgrade"]}, "tests": [
        {"name": "upgrade", "features": ["RayServiceZeroDowntimeUpgrade"], "outcome": "passed"},
        {"name": "suspend_during_upgrade", "features": ["RayServiceSuspend", "RayServiceZeroDowntimeUpgrade"],
         "outcome": "skipped"},
    ]}
    assert certify.claim_problems(report) == []
    report["tests"][0]["outcome"] = "skipped"
    assert certify.claim_problems(report) == ["claimed feature RayServiceZeroDowntimeUpgrade skipped in upgrade"]


def edit(run_dir, change) -> None:
    """Rewrite the report of `run_dir` with `change` applied to it."""
    path = run_dir / "conformance-report.yaml"
    report = yaml.safe_load(path.read_text())
    change(report)
    path.write_text(yaml.safe_dump(report, sort_keys=False))


def test_an_outcome_edited_and_re_checksummed_fails_verify_on_its_statistics(suite):
    """The checksum is no signature: whoever edits an outcome can recompute it; the statistics the report states
    beside its tests then name the edit."""
    suite.tests(PASSING.replace('"""A RayCluster suspends."""', 'pytest.skip("no room")'))
    suite.run(CLAIMS)

    def forge(report):
        next(t for t in report["tests"] if t["name"] == "suspend")["outcome"] = "passed"
        report["certification"]["resultsChecksum"] = certify.results_checksum(report["tests"])

    edit(suite.run_dir, forge)
    assert certify.verify(suite.run_dir) == [
        "statistics do not match the tests (resource RayCluster extended statistics: the report says 0 passed, "
        "0 failed, 1 skipped, 0 unsupported, its tests give 1 passed, 0 failed, 0 skipped, 0 unsupported): the report "
        "was changed after the run"]


def test_every_stated_statistic_is_checked_against_the_tests(suite):
    run(suite)
    for change, named in [
        (lambda r: r["resources"][0]["core"].update(failedTests=["provisioning"]), "core failedTests"),
        (lambda r: r["resources"][0]["extended"].update(result="failure"), "extended result"),
        (lambda r: r["resources"][0].update(summary="Core tests succeeded."), "summary"),
        (lambda r: r["resources"][0]["extended"].update(unsupportedFeatures=[]), "extended unsupportedFeatures"),
        (lambda r: r["resources"][0]["core"].update(failedFeatures=["RayClusterProvisioning"]), "core failedFeatures"),
        (lambda r: r.update(shards=[{"runId": "a", "cluster": "c", "tests": 3}]),
         "the shards' test counts add up to 3"),
        (lambda r: r.update(baseline={"runId": "b", "regressed": [], "fixed": [], "counts": {"still-pass": 2}}),
         "has no baseline verdict"),
    ]:
        run(suite)
        edit(suite.run_dir, change)
        problems = certify.verify(suite.run_dir)
        assert len(problems) == 1 and problems[0].startswith("statistics do not match") and named in problems[0], \
            (named, problems)


def test_a_baseline_block_must_agree_with_the_tests_verdicts(suite):
    run(suite)

    def verdicts(report, verdict):
        for t in report["tests"]:
            t["baseline"] = verdict
        report["baseline"] = {"runId": "b", "regressed": [], "fixed": [], "counts": {"still-pass": 1}}

    edit(suite.run_dir, lambda r: verdicts(r, "still-pass"))
    assert certify.verify(suite.run_dir) == [
        "statistics do not match the tests (baseline counts: the report says 1 still-pass, its tests give 2 "
        "still-pass): the report was changed after the run"]
    edit(suite.run_dir, lambda r: verdicts(r, "regressed"))
    assert "passed cannot be regressed against the baseline" in certify.verify(suite.run_dir)[0]


def copy_of_suite(tmp_path):
    copy = tmp_path / "suite"
    for part in dict.fromkeys(d for d, _ in certify.SUITE_PARTS):
        shutil.copytree(certify.ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(certify.ROOT / "profiles", copy / "profiles")
    return copy


def test_the_suite_digest_covers_the_framework_code_the_tests_run(suite, tmp_path):
    """A must-hold weakened in testing/expect/ is another suite, as much as an edited test."""
    run(suite)
    copy = copy_of_suite(tmp_path)
    assert certify.verify(suite.run_dir, root=copy) == []
    expect = copy / "src" / "rayconformance" / "testing" / "expect" / "raycluster.py"
    expect.write_text(expect.read_text() + "\nassert True\n")
    problems = certify.verify(suite.run_dir, root=copy)
    assert len(problems) == 1 and problems[0].startswith("suite digest") and "framework code" in problems[0], problems


@pytest.mark.parametrize("changed", ["clusters/kind-gpu.yaml", "clusters/local/versions.env",
                                     "clusters/local/ray-constraints.txt"])
def test_the_suite_digest_covers_the_beds_definitions_and_pinned_versions(suite, tmp_path, changed):
    """Another Kubernetes, another Ray dependency, another cluster definition: another suite."""
    run(suite)
    copy = copy_of_suite(tmp_path)
    path = copy / changed
    path.write_text(path.read_text() + "\n# changed\n")
    problems = certify.verify(suite.run_dir, root=copy)
    assert len(problems) == 1 and problems[0].startswith("suite digest") and "test beds" in problems[0], problems


def test_the_profile_digest_is_checked_against_the_profile_the_report_names(suite, tmp_path):
    run(suite)
    copy = copy_of_suite(tmp_path)
    profile = copy / "profiles" / "kuberay-v1.6.1.yaml"
    profile.write_text(profile.read_text() + "\n# changed\n")
    problems = certify.verify(suite.run_dir, root=copy)
    assert len(problems) == 1 and problems[0].startswith("profile digest") and "kuberay-v1.6.1.yaml" in problems[0], \
        problems
    profile.unlink()  # a profile the suite does not have is not checked
    assert certify.verify(suite.run_dir, root=copy) == []


def test_a_report_is_checked_by_the_digest_scheme_its_suite_records(suite):
    """A report cannot step down to a narrower scheme (one that leaves fixtures/ out), nor name an unknown one."""
    run(suite)
    assert suite.report()["certification"]["digestScheme"] == certify.SCHEME

    def narrower(report):
        del report["certification"]["digestScheme"]
        report["certification"]["suiteDigest"] = certify.suite_digest(certify.ROOT, 1)

    edit(suite.run_dir, narrower)
    problems = certify.verify(suite.run_dir)
    assert len(problems) == 1 and problems[0].startswith(f"digest scheme 1 is not this suite's {certify.SCHEME}"), \
        problems
    edit(suite.run_dir, lambda r: r["certification"].update(digestScheme=99))
    problems = certify.verify(suite.run_dir)
    assert len(problems) == 1 and problems[0].startswith("digest scheme 99 is not one this suite knows"), problems


def one_file_feature_list() -> str:
    """This suite's feature list written as one module, the way it was kept before it moved into a package."""
    package = certify.ROOT / "src" / "rayconformance" / "features"
    lists = [(package / f"{r}.py").read_text().split("FEATURES: tuple[Feature, ...] = (", 1)[1].rsplit(")", 1)[0]
             for r in ("raycluster", "rayjob", "rayservice", "raycronjob")]
    init = (package / "__init__.py").read_text().split("\nFEATURES: tuple[Feature, ...] =", 1)[1].split("\n", 1)[1]
    return ((package / "model.py").read_text() + "\n\nFEATURES: tuple[Feature, ...] = (" + "".join(lists) + ")\n"
            + init)


def test_an_earlier_one_file_feature_list_is_read(tmp_path):
    older = one_file_feature_list().replace('"a RayJob submitted by', '"then: a RayJob submitted by')
    (tmp_path / "src" / "rayconformance").mkdir(parents=True)
    (tmp_path / "src" / "rayconformance" / "features.py").write_text(older)
    table = certify.feature_table(tmp_path)
    assert table.BY_NAME["RayJobK8sJobMode"].description.startswith("then: a RayJob submitted by")
    assert table.classify(["RayJobK8sJobMode"]) == {"RayJob": "core"}


def test_a_feature_list_kept_one_module_per_resource_is_read_from_the_suite_of_the_report(tmp_path):
    shutil.copytree(certify.ROOT / "src" / "rayconformance" / "features", tmp_path / "src" / "rayconformance" / "features")
    rayjob = tmp_path / "src" / "rayconformance" / "features" / "rayjob.py"
    rayjob.write_text(rayjob.read_text().replace('"a RayJob submitted by', '"then: a RayJob submitted by'))
    table = certify.feature_table(tmp_path)
    assert table.BY_NAME["RayJobK8sJobMode"].description.startswith("then: a RayJob submitted by")
    assert not [m for m in sys.modules if m.startswith("rayconformance_suite_features")]  # nothing left loaded


def test_an_earlier_feature_list_grouped_in_profiles_is_read_as_resources(tmp_path):
    older = one_file_feature_list().replace("RESOURCES", "PROFILES")
    older = older.replace("    resource: str", "    profile: str").replace("{f.resource:", "{f.profile:")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "features.py").write_text(older)  # where it was before src/rayconformance
    table = certify.feature_table(tmp_path)
    assert table.RESOURCES == ("RayCluster", "RayJob", "RayService", "RayCronJob")
    assert table.BY_NAME["RayJobK8sJobMode"].resource == "RayJob"
    assert table.classify(["RayJobK8sJobMode"]) == {"RayJob": "core"}
