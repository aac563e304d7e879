"""Certification you can check: a report records digests of what ran, and `verify` finds what was changed."""
from __future__ import annotations

import shutil

import yaml

from rayconformance.fixtures import certify
from rayconformance.__main__ import main

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

from rayconformance.fixtures import certify, report


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
    assert "Core test provisioning of profile RayCluster failed" in problems, problems
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
