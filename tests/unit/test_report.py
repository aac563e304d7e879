"""The conformance report: schema, result rules, counts and durations, also under pytest-xdist; and what a
run does when the cluster cannot be brought up."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from rayconformance import features
from rayconformance.operator import profiles
from rayconformance.report import counting, results as report
from rayconformance.report.results import Record

from .conftest import usage_error

PUBLISHED = Path(__file__).resolve().parents[2] / "reports" / "published"


def validate(data: dict) -> None:
    jsonschema.Draft202012Validator(json.loads(report.SCHEMA.read_text())).validate(data)


def resource(data: dict, name: str) -> dict:
    return next(p for p in data["resources"] if p["name"] == name)


def check_sample_report(data: dict) -> None:
    """What the report of SAMPLE_TESTS with --all-features and --skip-tests=autoscaler[v2] must say."""
    validate(data)
    rc, rj, rs = resource(data, "RayCluster"), resource(data, "RayJob"), resource(data, "RayService")
    assert rc["core"] == {"result": "success", "statistics": {"passed": 1, "failed": 0, "skipped": 0, "unsupported": 0},
                          "failedTests": [], "failedFeatures": [], "skippedTests": [], "unsupportedTests": []}
    assert rc["extended"]["result"] == "failure"
    assert rc["extended"]["statistics"] == {"passed": 1, "failed": 1, "skipped": 1, "unsupported": 0}
    assert rc["extended"]["failedTests"] == ["suspend"] and rc["extended"]["skippedTests"] == ["autoscaler[v2]"]
    assert rc["extended"]["failedFeatures"] == ["RayClusterSuspend"]
    assert "RayClusterGPUWorkerGroups" in rc["extended"]["supportedFeatures"]
    lacked = {f for f in profiles.load(data["operator"]["profile"]).lacks
              if features.BY_NAME[f].resource == "RayCluster" and features.BY_NAME[f].level == "extended"}
    assert set(rc["extended"]["unsupportedFeatures"]) == lacked  # --all-features: all the release has
    assert rj["core"]["result"] == "success" and rj["extended"]["statistics"]["passed"] == 0
    assert rs["core"]["result"] == "untested" and rs["summary"] == \
        "Core: no test of a claimed feature ran. Extended: no test of a claimed feature ran."
    tests = {t["name"]: t for t in data["tests"]}
    assert set(tests) == {"provisioning", "suspend", "job", "autoscaler[v1]", "autoscaler[v2]"}
    assert tests["provisioning"]["durationSeconds"] >= 0.05
    assert 0 <= tests["provisioning"]["startSeconds"] <= tests["provisioning"]["stopSeconds"] <= data["wallSeconds"]
    own = {t: {k: v for k, v in tests[t].get("measurements", {}).items() if not k.startswith("environment.")}
           for t in ("job", "suspend")}
    assert own == {"job": {"traffic.requests": 42}, "suspend": {}}, own
    assert tests["provisioning"]["features"] == ["RayClusterProvisioning"]
    assert tests["provisioning"]["description"] == "A RayCluster comes up: head and workers Ready."
    assert "description" not in tests["suspend"]  # no docstring, no description
    assert tests["suspend"]["outcome"] == "failed" and tests["autoscaler[v2]"]["outcome"] == "skipped"
    assert tests["suspend"]["message"] == "AssertionError: the cluster did not suspend\nassert False"
    assert tests["autoscaler[v2]"]["reason"] == "skipped by --skip-tests"
    assert data["cluster"]["name"] == "fake-cluster" and data["cluster"]["bringupSeconds"] == 1.5
    assert data["cluster"]["details"] == {"fake": True} and data["cluster"]["kubernetesVersion"] is None


def test_report_contents(suite):
    suite.tests()
    result = suite.run("--all-features", "--skip-tests=autoscaler[v2]", "--mode=gpu",
                       "--report-version=v9.9.9")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    data = suite.report()
    check_sample_report(data)
    assert (data["apiVersion"], data["kind"], data["runId"], data["mode"]) == \
        (report.API_VERSION, report.KIND, "unit", "gpu")
    assert data["implementation"]["version"] == "v9.9.9" and data["implementation"]["project"] == "kuberay"
    assert data["operator"]["profile"] == "kuberay-v1.6.1"
    assert suite.provider_calls() == ["up", "down"]
    result.stdout.fnmatch_lines(["*conformance report: *reports/unit/conformance-report.yaml",
                                 "feature RayClusterSuspend FAILED in suspend (claimed by --all-features)",
                                 "*warning: could not read the cluster's version and nodes*"])


def test_the_schema_takes_the_blocks_per_resource_under_their_new_name_or_their_old_one():
    published = yaml.safe_load((PUBLISHED / "kuberay" / "v1.6.1" / report.FILENAME).read_text())
    blocks = published.pop(counting.OLD_RESOURCES_KEY)
    validate({**published, counting.OLD_RESOURCES_KEY: blocks})  # a report made before they were resources
    validate({**published, counting.RESOURCES_KEY: blocks})
    for wrong in ({**published}, {**published, counting.RESOURCES_KEY: blocks, counting.OLD_RESOURCES_KEY: blocks}):
        with pytest.raises(jsonschema.ValidationError):
            validate(wrong)


def test_html_and_junit_carry_the_features(suite):
    suite.tests()
    suite.run("--all-features")
    page = (suite.run_dir / "report.html").read_text()  # the suite's own page (report_page.py)
    assert "<th>features</th>" in page and "<td>RayClusterAutoscalerV2</td>" in page, page
    junit = ET.parse(suite.run_dir / "junit.xml")
    props = {(p.get("name"), p.get("value")) for p in junit.iter("property")}
    assert ("feature", "RayClusterProvisioning") in props and ("feature", "RayClusterAutoscalerV2") in props


def test_xdist_run_gives_one_correct_report_and_one_cluster(suite):
    suite.tests()
    result = suite.run_subprocess("-n", "2", "--all-features", "--skip-tests=autoscaler[v2]")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    check_sample_report(suite.report())
    assert suite.provider_calls() == ["up", "down"]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_provider_failure_is_one_line_and_writes_no_report(suite, xdist):
    suite.tests()
    run = suite.run_subprocess if xdist else suite.run
    line = usage_error(run(*xdist, "--all-features", factory="BrokenProvider"))
    assert line == ("ERROR: could not bring up the cluster: provider fake: the cluster is on fire; "
                    "put it out and retry")
    assert not (suite.run_dir / "conformance-report.yaml").exists()
    assert suite.provider_calls() == ["up"], "a provider that did not come up is not taken down"


def test_keep_resources_leaves_the_cluster_up(suite):
    suite.tests()
    result = suite.run("--all-features", "--keep-resources")
    assert suite.provider_calls() == ["up"]
    result.stdout.fnmatch_lines(["*resources kept; the cluster's kubeconfig: *reports/unit/kubeconfig"])


def rec(name: str, outcome: str, feature: str = "RayClusterProvisioning") -> Record:
    return Record(nodeid=f"x.py::test_{name}", name=name, features=[feature], outcome=outcome)


@pytest.mark.parametrize("outcomes, result", [
    (["passed", "passed"], "success"),
    (["passed", "skipped"], "partial"),
    (["passed", "skipped", "failed"], "failure"),
    ([], "untested"),  # nothing shown to work is not a success
    (["passed", "unsupported"], "success"),  # a test of a feature not claimed is no skip of the verdict
    (["unsupported"], "untested"),
])
def test_result_rules(outcomes, result):
    tests = [rec(f"t{i}", "skipped" if o == "unsupported" else o, "RayClusterSuspend" if o == "unsupported"
                 else "RayClusterProvisioning") for i, o in enumerate(outcomes)]
    st = counting.status(tests, claimed={"RayClusterProvisioning"})
    assert st["result"] == result
    assert sum(st["statistics"].values()) == len(outcomes)
    assert st["statistics"]["unsupported"] == outcomes.count("unsupported") == len(st["unsupportedTests"])


@pytest.mark.parametrize("outcomes, result", [(["passed", "unsupported"], "partial"), ([], "partial")])
def test_result_rules_of_statistics_scheme_1(outcomes, result):
    """Reports before statistics scheme 2 counted the tests of unsupported features as skips (verify re-derives
    them so)."""
    tests = [rec(f"t{i}", "skipped" if o == "unsupported" else o, "RayClusterSuspend" if o == "unsupported"
                 else "RayClusterProvisioning") for i, o in enumerate(outcomes)]
    st = counting.status(tests, claimed={"RayClusterProvisioning"}, scheme=1)
    assert st["result"] == result and "unsupportedTests" not in st and set(st["statistics"]) == set(counting.OUTCOMES)
