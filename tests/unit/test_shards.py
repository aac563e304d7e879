"""--shard K/N splits the selected tests across N runs by recorded durations; merge makes one report of them."""
from __future__ import annotations

import yaml

from rayconformance.fixtures import certify, shards
from rayconformance.__main__ import main

SUITE = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """A RayCluster comes up."""


@pytest.mark.feature("RayClusterManualScaling")
def test_scaling(cluster):
    """Workers scale."""


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    """A RayCluster suspends."""


@pytest.mark.feature("RayJobK8sJobMode")
def test_job(cluster):
    """A job runs."""


@pytest.mark.feature("RayServiceReady")
def test_service(cluster):
    """A service is ready."""
'''
CLAIMS = "--supported-features=RayClusterProvisioning,RayClusterManualScaling,RayClusterSuspend,RayJobK8sJobMode"


def verdicts(run_dir) -> dict:
    report = yaml.safe_load((run_dir / "conformance-report.yaml").read_text())
    return {t["name"]: t["outcome"] for t in report["tests"]}


def test_split_is_balanced_longest_first_and_deterministic():
    known = {"a": 100, "b": 60, "c": 50, "d": 10}
    assert shards.split(["d", "c", "b", "a", "e"], 2, known) == [["a", "c"], ["b", "e", "d"]]  # e: the mean, 55
    assert shards.split(["x", "y", "z"], 2, {}) == [["x", "z"], ["y"]]
    assert shards.longest_first(["d", "a", "b"], known) == ["a", "b", "d"]


def test_two_shards_merged_equal_an_unsharded_run_and_verify(suite, tmp_path, capsys):
    suite.tests(SUITE)
    reports = suite.pytester.path / "reports"
    for run_id, extra in (("full", []), ("s1", ["--shard=1/2", f"--durations-from={reports / 'full'}"]),
                          ("s2", ["--shard=2/2", f"--durations-from={reports / 'full'}"])):
        suite.pytester.runpytest("conformance", "--provider-factory=fakeprovider:FakeProvider", f"--run-id={run_id}",
                                 "-p", "no:cacheprovider", CLAIMS, *extra)
    one, two = verdicts(reports / "s1"), verdicts(reports / "s2")
    assert one and two and not set(one) & set(two), (one, two)
    capsys.readouterr()
    assert main(["merge", str(reports / "s1"), str(reports / "s2"), "--out", str(tmp_path / "merged")]) == 0
    assert verdicts(tmp_path / "merged") == verdicts(reports / "full")
    merged = yaml.safe_load((tmp_path / "merged" / "conformance-report.yaml").read_text())
    full = yaml.safe_load((reports / "full" / "conformance-report.yaml").read_text())
    assert merged["profiles"] == full["profiles"] and [s["runId"] for s in merged["shards"]] == ["s1", "s2"]
    assert merged["selection"] == full["selection"]  # the shards together: no --shard
    assert certify.verify(tmp_path / "merged") == []
    assert (tmp_path / "merged" / "report.html").read_text().count("<tr class=") == len(full["tests"])


def test_bad_shard_is_one_line(suite):
    from .conftest import usage_error

    suite.tests(SUITE)
    assert "use K/N" in usage_error(suite.run("--shard=3/2"))
