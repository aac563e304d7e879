"""Workers chosen by measured CPU headroom (`-n auto`): the decision, the costs read from an earlier report, and a run
that prints and reports its choice and orders its tests by the earlier run's durations."""
from __future__ import annotations

import json

import pytest
import yaml

from rayconformance.run import workers


def costs(durations, demand, base):
    return workers.Costs(durations, demand, base, "by hand", "report.yaml")


def test_without_an_earlier_report_cores_plus_one_within_memory():
    assert workers.decide(2, 24, None).workers == 3
    assert workers.decide(8, 16, None).workers == 4  # one per 4 GiB
    choice = workers.decide(2, 24, None)
    assert choice.chosen_by == "default" and "cores + 1 (2 + 1)" in choice.reason


def test_the_most_workers_whose_expected_demand_stays_within_the_cores():
    many = {f"t{i}": 100.0 for i in range(20)}
    choice = workers.decide(2, 24, costs(many, demand=0.5, base=0.3))
    assert choice.workers == 3  # 0.3 + 3 x 0.5 = 1.8 = 90 % of 2 cores; a 4th would make 2.3
    assert choice.chosen_by == "measured"
    assert "0.30 (bed, operator) + 3 x 0.50" in choice.reason and "1.80 of 2 cores" in choice.reason
    assert workers.decide(2, 24, costs(many, demand=0.9, base=0.3)).workers == 1
    assert workers.decide(2, 24, costs(many, demand=0.5, base=2.5)).workers == 1  # a busy bed: one, never none
    assert workers.decide(4, 24, costs(many, demand=0.2, base=0.3)).workers == 5  # 16 by CPU, 6 by memory, cores + 1
    assert workers.decide(8, 24, costs(many, demand=0.2, base=0.3)).workers == 6  # by memory


def test_no_more_workers_than_the_longest_test_lets_finish_sooner():
    choice = workers.decide(8, 64, costs({"long": 300.0, "a": 100.0, "b": 100.0, "c": 50.0}, demand=0.1, base=0))
    assert choice.workers == 2  # 550 s in all over the longest's 300 s
    assert "at most 2 by test times" in choice.reason


def test_a_negligible_measured_demand_does_not_ask_for_unbounded_workers():
    many = {f"t{i}": 10.0 for i in range(100)}
    assert workers.decide(2, 1024, costs(many, demand=0.0, base=0.0)).workers == 3  # cores + 1, not 1.8 / MIN_DEMAND
    assert workers.decide(64, 1024, costs(many, demand=0.0, base=0.0)).workers == 65


def test_fit_separates_the_bed_from_the_tests():
    # base 0.4 cores, 0.6 per running test: a serial test alone, then two and three side by side
    windows = [(0, 100, 1.0), (100, 200, 1.6), (100, 200, 1.6), (200, 300, 2.2), (200, 300, 2.2), (200, 300, 2.2)]
    base, demand, how = workers.fit(windows)
    assert base == pytest.approx(0.4) and demand == pytest.approx(0.6)
    assert how.startswith("fitted over 6 tests")


def test_fit_charges_everything_to_the_tests_when_concurrency_never_varies():
    base, demand, how = workers.fit([(0, 50, 1.2), (50, 100, 0.8), (100, 200, 1.0)])
    assert base == 0.0 and demand == pytest.approx(1.0)  # weighted by length
    assert "all of the machine's demand charged to them" in how


def report(tests, cores=2) -> dict:
    return {"scheduling": {"cores": cores}, "tests": tests}


WINDOWS = [(0, 100, 1.0), (100, 200, 1.6), (100, 200, 1.6), (200, 300, 2.2), (200, 300, 2.2), (200, 300, 2.2)]


def test_costs_from_the_cores_busy_while_each_test_ran(tmp_path):
    rows = [{"name": n, "outcome": "passed", "durationSeconds": e - s, "startSeconds": s, "stopSeconds": e,
             "measurements": {workers.BUSY: busy, "environment.runnable_per_core": 9.0}} for n, (s, e, busy) in zip("abcdef", WINDOWS)]
    path = tmp_path / "conformance-report.yaml"
    path.write_text(yaml.safe_dump(report(rows)))
    c = workers.costs_of(path, cores_now=2)
    assert c.base == pytest.approx(0.4) and c.demand == pytest.approx(0.6)
    assert "cores busy" in c.how


def test_an_older_report_without_busy_cores_is_not_used(tmp_path):
    rows = [{"name": n, "outcome": "passed", "durationSeconds": e - s, "startSeconds": s, "stopSeconds": e,
             "measurements": {"environment.runnable_per_core": 2.5}} for n, (s, e, _) in zip("abcdef", WINDOWS)]
    path = tmp_path / "conformance-report.yaml"
    path.write_text(yaml.safe_dump(report(rows)))
    with pytest.raises(ValueError, match="busy cores"):
        workers.costs_of(path, cores_now=2)


def test_costs_from_bench_cpu_json_beside_the_report(tmp_path):
    rows = [{"name": "a", "outcome": "passed", "durationSeconds": 100.0},
            {"name": "b", "outcome": "failed", "durationSeconds": 300.0}]
    (tmp_path / "conformance-report.yaml").write_text(yaml.safe_dump(report(rows)))
    (tmp_path / "cpu.json").write_text(json.dumps({"wallSeconds": 200.0, "runCpuSeconds": 260.0, "tests": {
        "a": {"ray": 40.0, "harness": 5.0, "other": 5.0}, "b": {"ray": 120.0, "harness": 20.0, "other": 10.0}}}))
    c = workers.costs_of(tmp_path / "conformance-report.yaml", cores_now=2)
    assert c.demand == pytest.approx(0.5)  # 200 CPU-s over 400 s of tests
    assert c.base == pytest.approx(0.3)  # the other 60 CPU-s over 200 s
    assert "cpu.json" in c.how


def test_a_report_without_measurements_is_no_cost(tmp_path):
    path = tmp_path / "conformance-report.yaml"
    path.write_text(yaml.safe_dump(report([{"name": "a", "outcome": "passed", "durationSeconds": 5.0}])))
    with pytest.raises(ValueError):
        workers.costs_of(path, cores_now=2)


SUITE = '''
import time

import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_short(cluster):
    time.sleep(0.2)


@pytest.mark.feature("RayClusterSuspend")
def test_long(cluster):
    time.sleep(1.0)
'''


def test_auto_reads_the_earlier_run_and_says_so(suite):
    suite.tests(SUITE)
    first = suite.run_subprocess("--all-features", "-n", "auto")
    assert first.ret == 0, first.stdout.str()
    scheduling = suite.report()["scheduling"]
    assert scheduling["chosenBy"] == "default" and scheduling["order"].startswith("in collection order")
    first.stdout.fnmatch_lines(["rayconformance: * workers: no earlier report with test durations*"])

    second = suite.run_subprocess("--all-features", "-n", "auto")
    assert second.ret == 0, second.stdout.str()
    scheduling = suite.report()["scheduling"]
    assert scheduling["chosenBy"] == "measured", scheduling
    assert "expected CPU demand" in scheduling["reason"] and scheduling["workers"] >= 1
    assert scheduling["order"].startswith("longest first by the test durations in")
    second.stdout.fnmatch_lines(["rayconformance: * expected CPU demand*"])


def test_a_count_given_by_hand_is_used_and_reported(suite):
    suite.tests(SUITE)
    result = suite.run_subprocess("--all-features", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    scheduling = suite.report()["scheduling"]
    assert scheduling["workers"] == 2 and scheduling["chosenBy"] == "given"


def test_an_unsharded_run_is_ordered_by_the_newest_earlier_report(tmp_path):
    import os

    from rayconformance.run import options

    def write(run: str, cluster: str, mtime: int, rows=None) -> None:
        (tmp_path / run).mkdir()
        path = tmp_path / run / "conformance-report.yaml"
        path.write_text(yaml.safe_dump({"cluster": {"name": cluster}, "tests": rows or [
            {"name": "a", "outcome": "passed", "durationSeconds": 3.0}]}))
        os.utime(path, (mtime, mtime))

    v = {"durations-from": None, "baseline": None, "shard": None, "cluster": None, "operator-profile": "kuberay-v1.6.1"}
    assert options.durations_source(v, tmp_path, None) is None
    write("old", "local-cpu", 1000)
    write("new", "kind-cpu", 2000)
    write("skipped", "local-cpu", 3000, [{"name": "a", "outcome": "skipped", "durationSeconds": 0.0}])
    assert options.durations_source(v, tmp_path, None).endswith("new/conformance-report.yaml")
    assert options.durations_source({**v, "cluster": "local-cpu"}, tmp_path, None).endswith("old/conformance-report.yaml")
    assert options.durations_source({**v, "shard": "1/2"}, tmp_path, None) is None  # every shard the same split
    assert options.durations_source({**v, "baseline": "b.yaml"}, tmp_path, None) == "b.yaml"
    assert options.durations_source(v, tmp_path, {options.WORKER_DURATIONS: ""}) is None  # the controller's


def test_a_fresh_clone_is_ordered_by_its_profiles_published_run(tmp_path):
    from rayconformance.run import options

    published = tmp_path / "published" / "kuberay" / "v1.6.1"
    published.mkdir(parents=True)
    (published / "conformance-report.yaml").write_text(yaml.safe_dump({"cluster": {"name": "local-gpu"}, "tests": [
        {"name": "a", "outcome": "passed", "durationSeconds": 3.0}]}))
    v = {"durations-from": None, "baseline": None, "shard": None, "cluster": None, "operator-profile": "kuberay-v1.6.1"}
    assert options.durations_source(v, tmp_path, None) == str(published / "conformance-report.yaml")
    assert options.durations_source({**v, "operator-profile": "kuberay-v1.7.0"}, tmp_path, None) is None
    (tmp_path / "mine").mkdir()  # a run of its own comes first
    (tmp_path / "mine" / "conformance-report.yaml").write_text(yaml.safe_dump({"cluster": {"name": "local-cpu"}, "tests": [
        {"name": "a", "outcome": "passed", "durationSeconds": 5.0}]}))
    assert options.durations_source(v, tmp_path, None).endswith("mine/conformance-report.yaml")


def test_first_waves_pairs_the_longest_with_the_next_waves_shortest():
    from rayconformance.run import shards

    assert shards.first_waves(list("abcdefg"), 3) == list("afbecdg")
    assert shards.first_waves(list("abcd"), 2) == list("adbc")
    assert shards.first_waves(list("abc"), 2) == list("abc")  # too few: xdist hands them out one each
    assert shards.first_waves(list("abcd"), 1) == list("abcd")


ORDERED = '''
import time

import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_longest(cluster):
    time.sleep(3.0)


@pytest.mark.feature("RayClusterSuspend")
def test_second(cluster):
    time.sleep(2.5)


@pytest.mark.feature("RayJobK8sJobMode")
def test_third(cluster):
    time.sleep(0.3)


@pytest.mark.feature("RayClusterManualScaling")
def test_fourth(cluster):
    time.sleep(0.2)
'''


def test_the_two_longest_start_together_on_two_workers(suite):
    suite.tests(ORDERED)
    assert suite.run_subprocess("--all-features").ret == 0  # one process: the durations to order by
    result = suite.run_subprocess("--all-features", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    start = {t["name"]: t["startSeconds"] for t in suite.report()["tests"]}
    # handed out in blocks, the second longest would start after the longest, 3 s later
    assert abs(start["longest"] - start["second"]) < 2.0, start


def test_cores_plus_one_holds_only_after_a_run_that_used_the_machine_up():
    many = {f"t{i}": 100.0 for i in range(40)}
    left_room = workers.Costs(many, 0.21, 0.22, "by hand", "report.yaml", use=0.37)
    choice = workers.decide(2, 23, left_room)
    assert choice.workers == 5  # 7 by CPU, 5 by memory; the earlier run used 37 % of the machine
    assert "not held to cores + 1 (the earlier run used 37%" in choice.reason
    assert workers.decide(2, 23, workers.Costs(many, 0.21, 0.22, "by hand", "r", use=0.8)).workers == 3
    assert "cores + 1: the earlier run used an unknown share" in workers.decide(2, 23, costs(many, 0.21, 0.22)).reason


def test_the_earlier_runs_use_of_the_machine_comes_from_its_bench_or_its_busy_cores(tmp_path):
    rows = [{"name": n, "outcome": "passed", "durationSeconds": e - s, "startSeconds": s, "stopSeconds": e,
             "measurements": {workers.BUSY: busy}} for n, (s, e, busy) in zip("abcdef", WINDOWS)]
    path = tmp_path / "conformance-report.yaml"
    path.write_text(yaml.safe_dump(report(rows, cores=4)))
    # 1.0, 1.6 and 2.2 cores busy for 100 s each, however many tests overlapped in each stretch: 1.6 of 4 cores
    assert workers.costs_of(path, cores_now=2).use == pytest.approx(0.4)
    (tmp_path / workers.CPU_JSON).write_text(json.dumps({
        "wallSeconds": 300, "runCpuSeconds": 222.0, "capacityCpuSeconds": 600.0,
        "tests": {n: {"ray": 10.0} for n in "abcdef"}}))
    assert workers.costs_of(path, cores_now=2).use == pytest.approx(0.37)


def test_a_run_of_a_few_tests_does_not_displace_the_full_run(tmp_path):
    import os

    from rayconformance.run import shards

    def write(run: str, tests: int, mtime: int) -> None:
        (tmp_path / run).mkdir()
        path = tmp_path / run / "conformance-report.yaml"
        path.write_text(yaml.safe_dump({"cluster": {"name": "local-gpu"}, "tests": [
            {"name": f"t{i}", "outcome": "passed", "durationSeconds": 3.0} for i in range(tests)]}))
        os.utime(path, (mtime, mtime))

    write("full-old", 100, 1000)
    write("full", 90, 2000)  # most of the suite, newer: it wins over the larger old one
    write("selection", 11, 3000)
    assert shards.earlier_report(tmp_path, "local-gpu").parent.name == "full"


def test_an_earlier_report_under_the_run_directory_is_named_relative_to_it(tmp_path, monkeypatch):
    """The report a run orders its tests by is recorded relative to where the run started (no machine's path in a
    published report)."""
    from rayconformance.run import options

    report = tmp_path / "reports" / "earlier" / "conformance-report.yaml"
    report.parent.mkdir(parents=True)
    report.write_text(yaml.safe_dump({"tests": [{"name": "a", "nodeid": "conformance/t.py::test_a",
                                                 "outcome": "passed", "durationSeconds": 3.0}]}))
    monkeypatch.chdir(tmp_path)
    v = {"durations-from": None, "baseline": None, "shard": None, "cluster": None, "operator-profile": "x"}
    assert options.durations_source(v, tmp_path / "reports", None) == "reports/earlier/conformance-report.yaml"


def test_a_run_of_a_few_tests_does_not_displace_the_published_run(tmp_path):
    """With only narrowed runs in the report directory (a few tests, any cluster), the profile's published run,
    which knew the whole suite, is what the next run orders its tests and sizes its workers by."""
    import os

    from rayconformance.run import shards

    def write(path, tests: int, mtime: int, cluster: str = "kind-gpu") -> None:
        path.mkdir(parents=True)
        report = path / "conformance-report.yaml"
        report.write_text(yaml.safe_dump({"cluster": {"name": cluster}, "tests": [
            {"name": f"t{i}", "outcome": "passed", "durationSeconds": 3.0} for i in range(tests)]}))
        os.utime(report, (mtime, mtime))

    write(tmp_path / "published" / "kuberay" / "v1.7.0", 200, 3000, "local-gpu")
    write(tmp_path / "interrupted", 9, 2000)
    assert shards.earlier_report(tmp_path, None, "kuberay-v1.7.0").parent.name == "v1.7.0"
    write(tmp_path / "full", 180, 1000)  # a full run of this machine's, older than the checkout: it goes first
    assert shards.earlier_report(tmp_path, None, "kuberay-v1.7.0").parent.name == "full"


def test_a_kind_run_is_found_by_its_cluster_definition(tmp_path):
    """A kind report names its cluster (rayconformance-gpu) apart from the definition it came from (kind-gpu)."""
    from rayconformance.run import shards

    (tmp_path / "kind").mkdir()
    (tmp_path / "kind" / "conformance-report.yaml").write_text(yaml.safe_dump({
        "cluster": {"name": "rayconformance-gpu", "details": {"definition": "kind-gpu"}},
        "tests": [{"name": "a", "outcome": "passed", "durationSeconds": 3.0}]}))
    assert shards.earlier_report(tmp_path, "kind-gpu").parent.name == "kind"
    assert shards.earlier_report(tmp_path, "local-gpu") is None
