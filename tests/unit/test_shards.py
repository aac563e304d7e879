"""--shard K/N splits the selected tests across N runs by recorded durations; merge makes one report of them."""
from __future__ import annotations

import shutil

import yaml

from rayconformance.__main__ import main
from rayconformance.report import archive, certify, page as report_page
from rayconformance.run import shards

from .test_certify import edit

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


def sharded_runs(suite, shards: int = 2):
    """An unsharded run (`full`) and `shards` shard runs (`s1`...) of SUITE; their reports directory."""
    suite.tests(SUITE)
    reports = suite.pytester.path / "reports"
    for run_id, extra in [("full", [])] + [(f"s{k}", [f"--shard={k}/{shards}", f"--durations-from={reports / 'full'}"])
                                           for k in range(1, shards + 1)]:
        suite.pytester.runpytest("conformance", "--provider-factory=fakeprovider:FakeProvider", f"--run-id={run_id}",
                                 "-p", "no:cacheprovider", CLAIMS, *extra)
    return reports


def test_two_shards_merged_equal_an_unsharded_run_and_verify(suite, tmp_path, capsys):
    reports = sharded_runs(suite)
    one, two = verdicts(reports / "s1"), verdicts(reports / "s2")
    assert one and two and not set(one) & set(two), (one, two)
    capsys.readouterr()
    assert main(["merge", str(reports / "s1"), str(reports / "s2"), "--out", str(tmp_path / "merged")]) == 0
    assert verdicts(tmp_path / "merged") == verdicts(reports / "full")
    merged = yaml.safe_load((tmp_path / "merged" / "conformance-report.yaml").read_text())
    full = yaml.safe_load((reports / "full" / "conformance-report.yaml").read_text())
    assert merged["resources"] == full["resources"] and [s["runId"] for s in merged["shards"]] == ["s1", "s2"]
    assert [s["shard"] for s in merged["shards"]] == ["1/2", "2/2"]
    assert merged["selection"] == full["selection"]  # the shards together: no --shard
    assert certify.verify(tmp_path / "merged") == []
    for run_dir, data in ((tmp_path / "merged", merged), (reports / "full", full)):  # one page for both
        assert (run_dir / "report.html").read_text() == report_page.render(data, run_dir / "junit.xml")
    page = (tmp_path / "merged" / "report.html").read_text()
    assert all(f"<td>{t['name']}</td>" in page for t in full["tests"]) and "<th>shards</th>" in page
    assert archive.path_for(tmp_path / "merged").is_file()


def test_bad_shard_is_one_line(suite):
    from .conftest import usage_error

    suite.tests(SUITE)
    assert "use K/N" in usage_error(suite.run("--shard=3/2"))


def merge_error(capsys, *args) -> str:
    """The one line `merge` refuses with (exit 1, nothing written)."""
    capsys.readouterr()
    assert main(["merge", *map(str, args)]) == 1
    out, err = capsys.readouterr()
    assert not out and len(err.splitlines()) == 1, (out, err)
    return err.strip()


def test_merge_refuses_a_shard_given_twice_or_missing(suite, tmp_path, capsys):
    reports = sharded_runs(suite, shards=3)
    assert yaml.safe_load((reports / "s2" / "conformance-report.yaml").read_text())["selection"]["shard"] == \
        {"index": 2, "count": 3}
    out = tmp_path / "merged"
    s1, s2, s3 = reports / "s1", reports / "s2", reports / "s3"
    assert merge_error(capsys, s1, s2, s1, "--out", out) == \
        f"merge: {s1} is given twice (as {s1} and {s1}): give each shard's directory once"
    copy = tmp_path / "s1-copy"
    shutil.copytree(s1, copy)
    assert merge_error(capsys, s1, copy, s2, s3, "--out", out) == \
        f"merge: shard 1/3 is given twice ({s1} and {copy}): give each shard once"
    assert merge_error(capsys, s1, "--out", out) == "merge: shards 2/3, 3/3 missing (1 of 3 given): merge every " \
                                                    "shard of the run"
    assert merge_error(capsys, s3, s1, "--out", out) == "merge: shard 2/3 missing (2 of 3 given): merge every shard " \
                                                        "of the run"
    assert not out.exists()
    assert main(["merge", str(s3), str(s1), str(s2), "--out", str(out)]) == 0  # in any order
    merged, full = (yaml.safe_load((d / "conformance-report.yaml").read_text()) for d in (out, reports / "full"))
    assert merged["selection"] == full["selection"] and certify.verify(out) == []


def test_merge_refuses_reports_that_are_not_shards_of_one_split(suite, tmp_path, capsys):
    reports = sharded_runs(suite)
    out, s1, s2 = tmp_path / "merged", reports / "s1", reports / "s2"
    assert merge_error(capsys, reports / "full", s2, "--out", out).startswith(
        f"merge: {reports / 'full'} is no shard: its report names no selection.shard")

    other = tmp_path / "other-split"
    shutil.copytree(s2, other)
    edit(other, lambda r: r["selection"].update(shard={"index": 2, "count": 3}))
    assert merge_error(capsys, s1, other, "--out", out) == \
        "merge: the shards are of different splits: 1/2, 2/3; merge the shards of one run"
    overlapping = tmp_path / "overlapping"
    shutil.copytree(s1, overlapping)
    edit(overlapping, lambda r: r["selection"].update(shard={"index": 2, "count": 2}))
    assert "the shards split different selections" in merge_error(capsys, s1, overlapping, "--out", out)
