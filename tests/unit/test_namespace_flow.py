"""The `namespace` fixture's lifecycle: diagnostics (a failed test's with logs), then vendors' hooks, then deletion."""
from __future__ import annotations

import json

CONFTEST = '''
import json
from pathlib import Path

import pytest

from rayconformance.report import diagnostics
from rayconformance.kube import namespaces

calls = []


def fake_collect(api, namespace, out, **kwargs):
    out.mkdir(parents=True, exist_ok=True)
    (out / "pods.yaml").write_text("kind: Pod\\n")
    calls.append(["collect", namespace, kwargs["operator"], kwargs["logs"]])
    return []


@pytest.fixture(scope="session", autouse=True)
def no_kubernetes_api():
    mp = pytest.MonkeyPatch()
    mp.setattr(namespaces, "create", lambda core, short, run_id: calls.append(["create", short, run_id]) or f"rc-{short}")
    mp.setattr(namespaces, "delete", lambda core, name, timeout: calls.append(["delete", name]))
    mp.setattr(diagnostics, "collect", fake_collect)
    yield
    mp.undo()
    Path("calls.json").write_text(json.dumps(calls))


def pytest_rayconformance_after_test(item, namespace, diagnostics_dir):
    calls.append(["hook", namespace, diagnostics_dir.name])
'''

TESTS = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_fine(namespace, operator):
    assert namespace == "rc-fine" and operator.observed == {}


@pytest.mark.feature("RayClusterSuspend")
def test_broken(namespace):
    assert False
'''


def calls(pytester) -> list[list]:
    return json.loads((pytester.path / "calls.json").read_text())


def test_every_test_is_diagnosed_before_the_namespace_goes_a_failed_one_with_logs(suite, pytester):
    """The evidence behind a pass is kept as a failure's is (its objects and events); logs for a failure."""
    pytester.makeconftest(CONFTEST)
    suite.tests(TESTS)
    result = suite.run("--operator-profile=none", "--all-features", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    assert calls(pytester) == [
        ["create", "fine", "unit"], ["collect", "rc-fine", None, False], ["hook", "rc-fine", "fine"],
        ["delete", "rc-fine"],
        ["create", "broken", "unit"], ["collect", "rc-broken", None, True], ["hook", "rc-broken", "broken"],
        ["delete", "rc-broken"],
    ]
    tests = {t["name"]: t for t in suite.report()["tests"]}
    assert tests["broken"]["diagnostics"] == "diagnostics/broken" and tests["fine"]["diagnostics"] == "diagnostics/fine"
    page = (suite.run_dir / "report.html").read_text()  # the suite's page links each test's diagnostics
    assert "href='diagnostics/broken/'" in page, page
    assert '<property name="diagnostics" value="diagnostics/broken"' in (suite.run_dir / "junit.xml").read_text()


def test_diagnostics_failed_keeps_a_passing_tests_namespace_out_and_full_keeps_its_logs(suite, pytester):
    pytester.makeconftest(CONFTEST)
    suite.tests(TESTS)
    suite.run("--operator-profile=none", "--all-features", "-p", "no:randomly", "--diagnostics=failed")
    assert [c for c in calls(pytester) if c[0] == "collect"] == [["collect", "rc-broken", None, True]]
    suite.run("--operator-profile=none", "--all-features", "-p", "no:randomly", "--diagnostics=full")
    assert [c for c in calls(pytester) if c[0] == "collect"] == [["collect", "rc-fine", None, True],
                                                                 ["collect", "rc-broken", None, True]]


def test_keep_resources_keeps_the_namespace(suite, pytester):
    pytester.makeconftest(CONFTEST)
    suite.tests(TESTS)
    suite.run("--operator-profile=none", "--all-features", "--keep-resources")
    assert not [c for c in calls(pytester) if c[0] == "delete"]


def test_failing_vendor_hook_does_not_change_the_outcome(suite, pytester):
    pytester.makeconftest(CONFTEST + "\n\ndef pytest_rayconformance_after_test(item, namespace, diagnostics_dir):\n"
                                     "    raise RuntimeError('vendor bug')\n")
    suite.tests(TESTS)
    result = suite.run("--operator-profile=none", "--all-features")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*pytest_rayconformance_after_test failed: vendor bug*"])
