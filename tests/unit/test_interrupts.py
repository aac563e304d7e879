"""Ctrl-C: fixture finalizers still reach the cluster, and the cluster still goes down when pressed again; SIGTERM and
SIGHUP stop a run as Ctrl-C does."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from rayconformance.testing.waiting import wait_until

INTERRUPTED = '''
import pytest


@pytest.fixture(scope="session")
def uses_cluster(cluster):
    yield
    with open("reports/unit/fake-calls", "a") as f:
        f.write("finalizer\\n")
    if {again}:
        raise KeyboardInterrupt  # Ctrl-C pressed again while fixtures are torn down


@pytest.mark.feature("RayClusterProvisioning")
def test_interrupted(uses_cluster):
    raise KeyboardInterrupt  # Ctrl-C during a test
'''


@pytest.mark.parametrize("again", [False, True], ids=["once", "again-during-teardown"])
def test_ctrl_c_runs_finalizers_before_the_cluster_goes(suite, again):
    suite.tests(INTERRUPTED.format(again=again))
    result = suite.run_subprocess()
    output = "\n".join(result.stdout.lines + result.stderr.lines)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert suite.provider_calls() == ["up", "finalizer", "down"], output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert suite.report()["tests"][0]["outcome"] == "failed", output


SKIPS_ITSELF = '''
import pytest


@pytest.mark.feature("RayClusterGPUWorkerGroups")
def test_skips_itself(cluster):
    pytest.skip("no Node offers nvidia.com/gpu")


@pytest.mark.feature("RayClusterProvisioning")
def test_fails_then_teardown_skips(cluster, request):
    request.addfinalizer(lambda: pytest.skip("teardown skip"))
    assert False, "observed nothing"
'''


def test_outcomes_of_tests_that_skip_themselves_or_fail(suite):
    suite.tests(SKIPS_ITSELF)
    suite.run()
    tests = {t["name"]: t for t in suite.report()["tests"]}
    assert tests["skips_itself"]["outcome"] == "skipped", tests
    assert "nvidia.com/gpu" in tests["skips_itself"]["reason"], tests
    assert tests["fails_then_teardown_skips"]["outcome"] == "failed", tests


BLOCKS = '''
import pathlib
import threading

import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_blocks(cluster):
    pathlib.Path("reports/unit/started").write_text("")
    threading.Event().wait(120)  # until the run is stopped
'''


@pytest.mark.parametrize("signum, workers", [(signal.SIGTERM, "0"), (signal.SIGHUP, "0"), (signal.SIGTERM, "2")],
                         ids=["SIGTERM", "SIGHUP", "SIGTERM-xdist"])
def test_stop_signal_stops_the_run_as_ctrl_c_does(suite, signum, workers):
    """A run sent SIGTERM or SIGHUP (as CI cancels a job; started in the background, so SIGINT is ignored) reports
    the running test as failed, writes the report, takes the cluster down and exits non-zero."""
    suite.tests(BLOCKS)
    env = {**os.environ, "PYTHONPATH": str(suite.pytester.path)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *suite.args("-n", workers)], cwd=suite.pytester.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        wait_until(lambda: (suite.run_dir / "started").exists(), bool, "the test to start", 60, interval=0.2)
        proc.send_signal(signum)
        output, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode not in (0, -signum, 128 + signum), output
    assert suite.provider_calls() == ["up", "down"], output
    assert suite.report()["tests"][0]["outcome"] == "failed", output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    # the stopped test is named as interrupted, not as a failed feature of the operator
    assert "interrupted: 1 test(s) stopped before they finished" in output and "blocks" in output, output
    assert "feature RayClusterProvisioning FAILED" not in output, output


BLOCKS_IN_SETUP = '''
import pathlib
import threading

import pytest


@pytest.fixture
def slow_cluster(cluster):
    pathlib.Path("reports/unit/started").write_text("")
    threading.Event().wait(120)  # a bring-up that lasts until the run is stopped


@pytest.mark.feature("RayClusterProvisioning")
def test_waits_for_its_cluster(slow_cluster):
    pass
'''


@pytest.mark.parametrize("workers", ["0", "2"], ids=["alone", "xdist"])
def test_a_run_stopped_in_a_tests_setup_names_the_test_interrupted(suite, workers):
    """SIGTERM while a test's setup runs (e.g. the cluster's bring-up): the report still names that test, as
    interrupted, rather than leaving it out; under xdist too, where the controller reads what its workers send
    while they stop (src/rayconformance/run/stopped_workers.py)."""
    suite.tests(BLOCKS_IN_SETUP)
    env = {**os.environ, "PYTHONPATH": str(suite.pytester.path)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *suite.args("-n", workers)], cwd=suite.pytester.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: (suite.run_dir / "started").exists(), bool, "the setup to start", 60, interval=0.2)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode != 0, output
    [test] = suite.report()["tests"]
    assert (test["name"], test["outcome"], test["reason"]) == (
        "waits_for_its_cluster", "failed", "did not run to completion (interrupted)"), (test, output)
    assert "interrupted: 1 test(s) stopped before they finished" in output, output
