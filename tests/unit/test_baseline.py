"""A run against a baseline names exactly the regressed tests; --fail-on regression fails only on them."""
from __future__ import annotations

import pytest

from rayconformance.report import baseline

BEFORE = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """A RayCluster comes up."""


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    """A RayCluster suspends."""
    assert False, "a known failure of the last release"


@pytest.mark.feature("RayClusterManualScaling")
def test_scaling(cluster):
    """Workers scale."""
'''


def baseline_run(suite) -> str:
    suite.tests(BEFORE)
    suite.run("--run-id=before")
    return str(suite.pytester.path / "reports" / "before")


@pytest.mark.parametrize("now, regressed, status", [
    (BEFORE, [], pytest.ExitCode.OK),  # the known failure alone does not fail the gate
    (BEFORE.replace('"""Workers scale."""', '"""Workers scale."""\n    assert False, "broken"'), ["scaling"],
     pytest.ExitCode.TESTS_FAILED),
])
def test_regressions_are_named_and_alone_fail_the_run(suite, now, regressed, status):
    base = baseline_run(suite)
    suite.tests(now)
    result = suite.run(f"--baseline={base}", "--fail-on=regression")
    report = suite.report()
    assert result.ret == status, result.stdout.lines
    assert report["baseline"]["regressed"] == regressed and report["baseline"]["runId"] == "before"
    verdicts = {t["name"]: t["baseline"] for t in report["tests"]}
    assert verdicts["suspend"] == "still-failing" and verdicts["provisioning"] == "still-pass"
    summary = next(line for line in result.stdout.lines if line.startswith("against baseline before"))
    assert f"{len(regressed)} regressed" in summary, summary


def test_compare_covers_every_case():
    cases = {("passed", "passed"): "still-pass", ("failed", "passed"): "regressed", ("passed", "failed"): "fixed",
             ("failed", "failed"): "still-failing", ("passed", None): "new-pass", ("failed", "skipped"): "new-fail",
             ("skipped", "passed"): "skipped"}
    assert {k: baseline.compare(*k) for k in cases} == cases


def test_bad_baseline_is_one_line(suite, tmp_path):
    from .conftest import usage_error

    suite.tests(BEFORE)
    assert "no report there" in usage_error(suite.run(f"--baseline={tmp_path / 'nope'}"))
    assert "needs --baseline" in usage_error(suite.run("--fail-on=regression"))
