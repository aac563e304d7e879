"""A starved machine is not an operator failure: pressure measured per test, failures under overload marked."""
from __future__ import annotations

from pathlib import Path

from rayconformance.run import foreign, pressure

OVERLOADED_RUN = '''
import threading
import time

import pytest


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.feature("RayClusterProvisioning")
def test_fails_while_busy(cluster):
    workers = [threading.Thread(target=spin, args=(2.5,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert False, "expected Ready, observed NotReady"


@pytest.mark.feature("RayClusterSuspend")
def test_passes(cluster):
    pass
'''


def fake_proc(tmp_path: Path, running: int, pressure_us: int, ticks: list[int]) -> Path:
    (tmp_path / "pressure").mkdir(exist_ok=True)
    (tmp_path / "loadavg").write_text(f"1.00 1.00 1.00 {running}/200 12345\n")
    (tmp_path / "pressure" / "cpu").write_text(f"some avg10=0 avg60=0 avg300=0 total={pressure_us}\n"
                                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    (tmp_path / "stat").write_text("cpu  " + " ".join(map(str, ticks)) + "\n")
    return tmp_path


def test_window_reads_runnable_tasks_pressure_and_steal(tmp_path):
    proc = fake_proc(tmp_path, running=5, pressure_us=1_000_000, ticks=[100, 0, 50, 800, 0, 0, 0, 50, 0, 0])
    window = pressure.Window(cores=2, proc=proc, interval=0.05)
    fake_proc(tmp_path, running=5, pressure_us=1_000_000 + 10**7, ticks=[200, 0, 50, 850, 0, 0, 0, 100, 0, 0])
    window.start.at -= 20  # the window lasted 20 s, 10 s of which some task waited
    measured = window.close()
    assert measured["runnable_per_core"] == 2.0  # 5 running less the reader, on 2 cores
    assert measured["cpu_pressure_pct"] == 50.0
    assert measured["steal_pct"] == 25.0  # 50 of 200 ticks
    assert measured["busy_cores"] == 1.0  # of 200 ticks, 50 idle and 50 stolen: half of 2 cores busy
    quiet_neighbours = dict(measured, foreign_cores=0.0, steal_pct=0.0)
    assert pressure.Thresholds(2.0, 0.1).reasons(quiet_neighbours, 2) == ["runnable tasks per core 2.0 >= 2"]
    assert pressure.Thresholds(2.5, 0.1).reasons(quiet_neighbours, 2) == []
    assert pressure.Thresholds(2.5, 0.1).reasons(measured, 2) == [
        "0.5 of 2 cores taken by other processes or stolen >= 0.1 of the cores"]  # 25 % stolen of 2 cores
    assert "2.0 runnable tasks per core" in pressure.describe(measured)


def test_failure_under_overload_is_marked_in_message_report_and_summary(suite):
    suite.tests(OVERLOADED_RUN)
    result = suite.run("--overload-threshold", "0.2", "--foreign-load-threshold", "1000")
    output = "\n".join(result.stdout.lines)
    assert "environment overloaded" in output and "may be the runner's, not the operator's" in output, output
    tests = {t["name"]: t for t in suite.report()["tests"]}
    assert tests["fails_while_busy"]["environment"] == "overloaded", tests
    assert "environment" not in tests["passes"], tests
    assert tests["passes"]["measurements"]["environment.runnable_per_core"] is not None, tests
    assert "environment overloaded while these failed" in output and "fails_while_busy" in output, output


def test_failure_on_a_quiet_machine_is_not_marked(suite):
    suite.tests(OVERLOADED_RUN)
    suite.run("--overload-threshold", "1000", "--foreign-load-threshold", "1000")
    tests = {t["name"]: t for t in suite.report()["tests"]}
    assert tests["fails_while_busy"]["outcome"] == "failed" and "environment" not in tests["fails_while_busy"], tests


def test_failure_under_foreign_load_is_marked_by_its_own_threshold(suite, monkeypatch):
    # the run is in-process: a process of the test's would be the run's own
    monkeypatch.setattr(foreign, "foreign_ticks", lambda start, end: 100 * foreign.CLOCK_TICK)
    # a window of at least 2 s, the shortest over which foreign load is measured
    suite.tests(OVERLOADED_RUN.replace("range(2)", "range(1)").replace("args=(2.5,)", "args=(2.2,)"))
    result = suite.run("--overload-threshold", "1000", "--foreign-load-threshold", "0.5")
    output = "\n".join(result.stdout.lines)
    assert "cores taken by other processes or stolen >= 0.5 of the cores" in output, output
    tests = {t["name"]: t for t in suite.report()["tests"]}
    assert tests["fails_while_busy"]["environment"] == "overloaded", tests
    assert tests["fails_while_busy"]["measurements"]["environment.foreign_cores"] > 1, tests
    assert tests["passes"]["measurements"]["environment.foreign_cores"] is None, tests  # too short to tell
