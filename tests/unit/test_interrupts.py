"""Ctrl-C: fixture finalizers still reach the cluster, and the cluster still goes down when pressed again."""
from __future__ import annotations

import pytest

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
