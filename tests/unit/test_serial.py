"""Serial tests run alone: under xdist a `serial` test never overlaps another test, while other tests overlap
each other. Each sample test records its start and end in a file; the overlaps are read back."""
from __future__ import annotations

import json
import threading
import time

from rayconformance.run.serial import turn

TESTS = """
import json, os, time
import pytest

def record(name):
    path = os.path.join(os.environ["SPANS"], name)
    start = time.time(); time.sleep(0.6); open(path, "w").write(json.dumps([start, time.time()]))

@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.parametrize("i", range(4))
def test_parallel(cluster, i):
    record(f"parallel{i}")

@pytest.mark.feature("RayClusterSuspend")
@pytest.mark.serial
def test_alone(cluster):
    record("alone")
"""


def overlaps(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_serial_test_overlaps_no_other_test(suite, pytester, monkeypatch):
    spans = pytester.mkdir("spans")
    monkeypatch.setenv("SPANS", str(spans))
    suite.tests(TESTS)
    result = suite.run_subprocess("--all-features", "-n", "3")
    result.assert_outcomes(passed=5)
    got = {p.name: json.loads(p.read_text()) for p in spans.iterdir()}
    alone = got.pop("alone")
    assert not [n for n, s in got.items() if overlaps(s, alone)], f"the serial test overlapped: {got} vs {alone}"
    assert any(overlaps(a, b) for a in got.values() for b in got.values() if a is not b), \
        f"the parallel tests never overlapped under -n 3: {got}"
    assert suite.report()["wallSeconds"] > 0


def test_a_waiting_serial_test_blocks_new_tests(tmp_path):
    """The turnstile: once a serial test waits for the running tests, a test arriving later waits for it."""
    order, running = [], threading.Event()

    def parallel(name, hold):
        with turn(tmp_path, alone=False):
            running.set()
            order.append(f"{name}+")
            time.sleep(hold)
            order.append(f"{name}-")

    first = threading.Thread(target=parallel, args=("first", 0.5))
    first.start()
    running.wait()
    def alone():
        with turn(tmp_path, alone=True):
            order.append("serial")
            time.sleep(0.3)
            order.append("serial-done")

    serial = threading.Thread(target=alone)
    serial.start()
    time.sleep(0.1)
    late = threading.Thread(target=parallel, args=("late", 0))
    late.start()
    for t in (first, serial, late):
        t.join(5)
    assert order.index("serial") > order.index("first-") and order.index("late+") > order.index("serial"), order


def test_a_serial_test_skipped_by_a_marker_takes_no_lock(pytester):
    """A skipped serial test (skip, or skipif whose condition holds) runs nothing, so it must not wait for the
    running tests (or make new ones wait for it)."""
    from rayconformance.run.serial import _skipped

    items = pytester.getitems("""
        import pytest

        @pytest.mark.serial
        @pytest.mark.skipif(True, reason="no GPU node")
        def test_skipif_true(): pass

        @pytest.mark.serial
        @pytest.mark.skip(reason="unsupported")
        def test_skip(): pass

        @pytest.mark.serial
        @pytest.mark.skipif(False, reason="runs")
        def test_skipif_false(): pass
    """)
    assert {i.name: _skipped(i) for i in items} == {"test_skipif_true": True, "test_skip": True,
                                                     "test_skipif_false": False}


GATEWAY_TESTS = """
import json, os, time
import pytest

@pytest.fixture
def gateway():
    return "one per cluster"

def record(name):
    path = os.path.join(os.environ["SPANS"], name)
    start = time.time(); time.sleep(0.6); open(path, "w").write(json.dumps([start, time.time()]))

@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.parametrize("i", range(2))
def test_with_gateway(cluster, gateway, i):
    record(f"gateway{i}")

@pytest.mark.feature("RayClusterSuspend")
def test_without(cluster):
    record("without")
"""


def spans_of_three(suite, pytester, monkeypatch, tests: str, cores: int = 8) -> dict[str, list[float]]:
    """Runs `tests` (three sample tests that record their spans) under -n 3 on a machine of `cores` (as the run
    sees it); each test's [start, end] by name."""
    spans = pytester.mkdir("spans")
    monkeypatch.setenv("SPANS", str(spans))
    pytester.makeconftest(MACHINE_OF.format(cores=cores))
    suite.tests(tests)
    suite.run_subprocess("--all-features", "-n", "3").assert_outcomes(passed=3)
    return {p.name: json.loads(p.read_text()) for p in spans.iterdir()}


def test_tests_using_an_exclusive_fixture_never_overlap(suite, pytester, monkeypatch):
    """Two tests using the `gateway` fixture (one Gateway implementation for the whole cluster) run one after the
    other, while a test that does not use it still runs beside them."""
    got = spans_of_three(suite, pytester, monkeypatch, GATEWAY_TESTS)
    assert not overlaps(got["gateway0"], got["gateway1"]), f"the two tests using the gateway overlapped: {got}"
    assert any(overlaps(got["without"], got[g]) for g in ("gateway0", "gateway1")), \
        f"the test without the gateway ran beside neither: {got}"


LANE_TESTS = """
import json, os, time
import pytest

def record(name):
    path = os.path.join(os.environ["SPANS"], name)
    start = time.time(); time.sleep(0.6); open(path, "w").write(json.dumps([start, time.time()]))

@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.lane("upgrade-under-load")
@pytest.mark.parametrize("i", range(2))
def test_in_lane(cluster, i):
    record(f"lane{i}")

@pytest.mark.feature("RayClusterSuspend")
def test_without(cluster):
    record("without")
"""


MACHINE_OF = """
from rayconformance.run import workers

workers.machine = lambda: ({cores}, 24)
"""


def test_tests_of_one_lane_never_overlap(suite, pytester, monkeypatch):
    """Two tests of the lane upgrade-under-load run one after the other; a test of no lane still runs beside them
    on a machine of 8 cores."""
    got = spans_of_three(suite, pytester, monkeypatch, LANE_TESTS)
    assert not overlaps(got["lane0"], got["lane1"]), f"the two tests of one lane overlapped: {got}"
    assert any(overlaps(got["without"], got[g]) for g in ("lane0", "lane1")), \
        f"the test of no lane ran beside neither: {got}"


def test_a_lane_needing_the_machine_runs_alone_on_a_small_one(suite, pytester, monkeypatch):
    """On 2 cores the tests of upgrade-under-load run alone: neither overlaps the other or the test of no lane, and
    the run's header says so."""
    got = spans_of_three(suite, pytester, monkeypatch, LANE_TESTS, cores=2)
    lane = [got["lane0"], got["lane1"]]
    assert not overlaps(*lane) and not any(overlaps(got["without"], s) for s in lane), \
        f"a test of the lane upgrade-under-load ran beside another on 2 cores: {got}"


def test_the_header_names_the_lanes_run_alone(suite, pytester, monkeypatch):
    monkeypatch.setenv("SPANS", str(pytester.mkdir("spans")))
    pytester.makeconftest(MACHINE_OF.format(cores=2))
    suite.tests(LANE_TESTS)
    result = suite.run("--all-features")
    result.stdout.fnmatch_lines(["*lane upgrade-under-load: its tests run alone on this machine (2 cores, fewer than 4*"])
    assert suite.report()["scheduling"]["lanesAlone"] == ["upgrade-under-load"]


def test_an_unknown_lane_is_one_line(suite):
    suite.tests(LANE_TESTS.replace('lane("upgrade-under-load")', 'lane("upgrades")'))
    result = suite.run_subprocess("--all-features")
    assert result.ret != 0
    assert "names no lane; use one of upgrade-under-load" in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_the_upgrades_under_traffic_share_a_lane_by_module():
    """The RayService upgrades measured under traffic are in the lane upgrade-under-load by their modules, which
    exist (a renamed module would silently leave it)."""
    from pathlib import Path

    from rayconformance.run.serial import LANES

    root = Path(__file__).resolve().parents[2]
    for name, lane in LANES.items():
        missing = [m for m in lane.modules if not (root / m).is_file()]
        assert not missing, f"lane {name} names modules that do not exist: {missing}"
    assert "conformance/rayservice/test_upgrade.py" in LANES["upgrade-under-load"].modules
