"""The field-coverage measure (src/rayconformance/fieldcov): the fields a CRD schema has, what a created or patched body
sets, what a test declares it asserts (the `covers` marker, `declare`, the helper decorator), the report's section from
a run (also under pytest-xdist), and `python -m rayconformance field-coverage`."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from rayconformance.__main__ import main
from rayconformance.fieldcov import coverage, paths, record
from rayconformance.testing import ray
from rayconformance.testing.handles.base import must
from rayconformance.report import results as report
from rayconformance.report import field_coverage as show

CRD_FILE = Path(__file__).parent / "data" / "fieldcov" / "ray.io_rayclusters.v1.7.0.yaml"
CONTAINER = {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"},
                                              **{p: {"type": "object"} for p in paths.CONTAINER_PARTS}}}
POD_TEMPLATE = {"type": "object", "properties": {
    "metadata": {"type": "object"},
    "spec": {"type": "object", "properties": {"containers": {"type": "array", "items": CONTAINER},
                                              "nodeSelector": {"type": "object",
                                                               "additionalProperties": {"type": "string"}}}}}}
SMALL = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "suspend": {"type": "boolean"},
    "args": {"type": "array", "items": {"type": "string"}},
    "params": {"type": "object", "additionalProperties": {"type": "string"}},
    "opaque": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "resources": {"type": "object", "properties": {"limits": {"type": "object"}, "requests": {"type": "object"}}},
    "service": {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"},
                                                 "status": {"type": "object"}}},
    "groups": {"type": "array", "items": {"type": "object", "properties": {
        "replicas": {"type": "integer"}, "template": POD_TEMPLATE,
        "env": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "value": {"type": "string"}, "valueFrom": {"type": "object"}}}}}}}}}}}


@pytest.fixture(scope="module")
def crd() -> dict:
    return yaml.load(CRD_FILE.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def fields(crd) -> dict[str, paths.Field]:
    return {f.text: f for f in coverage.crd_fields(crd, coverage.load_keys())}


def test_a_schema_walks_into_one_node_per_value_array_map_and_kubernetes_type():
    found = {f.text: f.node for f in paths.schema_fields("Small", SMALL)}
    assert found == {
        "spec.suspend": "scalar", "spec.args": "array", "spec.params": "map", "spec.opaque": "object",
        "spec.resources": "core", "spec.service": "core", "spec.groups[].replicas": "scalar",
        "spec.groups[].template": "podTemplate", "spec.groups[].env": "core",
        **{f"spec.groups[].template.spec.containers[].{p}": "container" for p in paths.CONTAINER_PARTS}}


def test_the_real_raycluster_crd(fields):
    assert fields["spec.headGroupSpec.template"].node == "podTemplate"
    assert fields["spec.workerGroupSpecs[].template.spec.containers[].readinessProbe"].node == "container"
    assert fields["spec.workerGroupSpecs[].replicas"].node == "scalar"
    assert fields["spec.headGroupSpec.rayStartParams"].node == "map"
    assert fields["spec.headGroupSpec.headService"].node == "core"  # an embedded Service: one node, no status
    assert not [t for t in fields if t.startswith("spec.headGroupSpec.template.spec.")
                and t.rpartition(".")[2] not in paths.CONTAINER_PARTS]
    assert fields["spec.headGroupSpec.rayStartParams[num-cpus]"].node == "key"
    assert fields["spec.workerGroupSpecs[].rayStartParams[address]"].segments[-2:] == ("rayStartParams", "address")
    assert "spec.workerGroupSpecs[].rayStartParams[port]" not in fields  # the GCS port is a head key
    assert fields["metadata.annotations[ray.io/ft-enabled]"].name == "RayCluster:metadata.annotations[ray.io/ft-enabled]"
    assert 100 < len(fields) < 200, len(fields)


@pytest.mark.parametrize("name, segments, keys", [
    ("RayCluster:spec.suspend", ("spec", "suspend"), 0),
    ("RayCluster:spec.workerGroupSpecs[].rayStartParams[num-cpus]",
     ("spec", "workerGroupSpecs", "[]", "rayStartParams", "num-cpus"), 1),
    ("RayService:metadata.annotations[ray.io/initializing-timeout]",
     ("metadata", "annotations", "ray.io/initializing-timeout"), 1),
])
def test_a_field_parses_and_renders_back(name, segments, keys):
    kind, parsed = paths.parse(name)
    assert parsed == segments
    assert f"{kind}:{paths.render(parsed, keys=keys)}" == name


@pytest.mark.parametrize("name", ["spec.suspend", "raycluster:spec.suspend", "RayCluster:status.state",
                                  "RayCluster:spec..suspend", "RayCluster:spec.a[b", "RayCluster:"])
def test_a_bad_field_is_one_line_naming_the_form(name):
    with pytest.raises(paths.PathError) as e:
        paths.parse(name)
    assert "\n" not in str(e.value) and "RayCluster:spec." in str(e.value)


def test_bodies_set_spec_paths_and_annotations():
    body = {"metadata": {"name": "c", "labels": {"a": "b"}, "annotations": {"ray.io/ft-enabled": "true"}},
            "spec": {"rayVersion": "2.9.0", "headGroupSpec": {"rayStartParams": {}},
                     "workerGroupSpecs": [{"replicas": 1}, {"replicas": 2, "suspend": None}]}}
    assert paths.body_paths(body) == {("metadata", "annotations", "ray.io/ft-enabled"), ("spec", "rayVersion"),
                                      ("spec", "headGroupSpec", "rayStartParams"),
                                      ("spec", "workerGroupSpecs", "[]", "replicas")}
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3},
             {"op": "add", "path": "/metadata/annotations/ray.io~1overwrite-container-cmd", "value": "true"},
             {"op": "remove", "path": "/spec/suspend"}, {"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    assert paths.body_paths(patch) == {("spec", "workerGroupSpecs", "[]", "replicas"),
                                       ("metadata", "annotations", "ray.io/overwrite-container-cmd")}


def test_creates_and_patches_are_recorded_for_the_running_test_only():
    res = ray.RayResources(None, "ns", "RayJob")
    res.co = SimpleNamespace(create_namespaced_custom_object=lambda *a: a[-1],
                             patch_namespaced_custom_object=lambda *a: a[-1])
    res.create({"spec": {"entrypoint": "x"}})  # no test recording: nothing kept
    rec = record._Active.recording = record.Recording()
    try:
        res.create({"spec": {"suspend": True}})
        res.patch("j", {"spec": {"shutdownAfterJobFinishes": True}})
        record.declare("RayJob:spec.suspend")
    finally:
        record._Active.recording = None
    assert rec.set_paths == {("RayJob", "spec", "suspend"), ("RayJob", "spec", "shutdownAfterJobFinishes")}
    assert rec.to_report(["RayJob:spec.entrypoint"]) == {
        "set": [["RayJob", "spec", "shutdownAfterJobFinishes"], ["RayJob", "spec", "suspend"]],
        "asserted": ["RayJob:spec.suspend"]}  # the marker counts only once the test's call ran


@record.covers("RayCluster:spec.suspend")
def must_be_suspended(api, namespace, name, timeout):
    return (name, timeout)


def test_a_covering_helper_declares_on_each_call_and_stays_a_must_hold():
    class Timeouts:
        medium = 7

    class Handle:
        api, namespace, timeouts, name = None, "ns", Timeouts(), "c"
        check = must(must_be_suspended, "medium")

    rec = record._Active.recording = record.Recording()
    try:
        assert Handle().check() == ("c", 7)
    finally:
        record._Active.recording = None
    assert rec.declared == {"RayCluster:spec.suspend"}


def test_the_section_counts_set_asserted_and_excluded(crd):
    keys = coverage.load_keys()
    set_paths = {("RayCluster", "spec", "headGroupSpec", "template", "spec", "containers", "[]", "image"),
                 ("RayCluster", "spec", "headGroupSpec", "rayStartParams", "num-cpus"),
                 ("RayCluster", "spec", "tlsOptions", "enabled"), ("RayJob", "spec", "suspend")}
    asserted = {"RayCluster:spec.autoscalerOptions", "RayCluster:spec.workerGroupSpecs[].template.spec.nodeSelector",
                "RayCluster:spec.headGroupSpec.rayStartParams[num-cpus]", "RayCluster:spec.nosuchfield"}
    exclusions = [coverage.Exclusion("*:tlsOptions", "needs cert-manager"),
                  coverage.Exclusion("RayCluster:spec.headGroupSpec.ingressOptions", "no ingress controller")]
    section = coverage.section([crd, {"spec": {"group": "other.io"}}], set_paths, asserted, keys, exclusions)
    (row,) = section["crds"]
    all_fields = coverage.crd_fields(crd, keys)
    autoscaler = [f for f in all_fields if f.text.startswith("spec.autoscalerOptions.")]
    assert row["fields"] == len(all_fields) and row["excluded"] == 1 + 5
    assert row["set"] == 3  # the head's pod template, its rayStartParams and their num-cpus; tlsOptions is excluded
    # autoscalerOptions' fields, the worker template, num-cpus and the map it is a key of
    assert row["asserted"] == len(autoscaler) + 3
    assert "spec.headGroupSpec.template" in row["setNotAsserted"]
    assert "spec.workerGroupSpecs[].template" not in row["uncovered"] + row["setNotAsserted"]
    assert "spec.suspend" in row["uncovered"] and "spec.tlsOptions.enabled" not in row["uncovered"]
    assert row["setPercent"] == round(300 / (row["fields"] - row["excluded"]), 1)
    assert section["exclusions"][0] == {"field": "*:tlsOptions", "reason": "needs cert-manager", "matched": 1}
    assert section["unknownDeclarations"] == ["RayCluster:spec.nosuchfield"]
    assert section["operatorKeys"] == "ray-project/kuberay v1.7.0"
    assert coverage.section("CRDs not readable: no cluster was brought up", set(), set(), keys, exclusions) == {
        "crdsRead": False, "reason": "CRDs not readable: no cluster was brought up", "operatorKeys": section[
            "operatorKeys"]}


def test_shard_sections_merge_into_the_section_of_the_whole_run(crd):
    keys, exclusions = coverage.load_keys(), [coverage.Exclusion("*:tlsOptions", "needs cert-manager")]
    one = ({("RayCluster", "spec", "suspend"), ("RayCluster", "spec", "headGroupSpec", "rayStartParams", "num-cpus")},
           {"RayCluster:spec.suspend", "RayCluster:spec.nosuchfield"})
    two = ({("RayCluster", "spec", "autoscalerOptions", "image"), ("RayCluster", "spec", "suspend")},
           {"RayCluster:spec.autoscalerOptions.image", "RayCluster:spec.nosuchfield", "RayCluster:spec.other"})
    shards = [coverage.section([crd], s, a, keys, exclusions) for s, a in (one, two)]
    whole = coverage.section([crd], one[0] | two[0], one[1] | two[1], keys, exclusions)
    merged = coverage.merged(shards)
    assert merged["crds"][0]["asserted"] == whole["crds"][0]["asserted"] > shards[0]["crds"][0]["asserted"]
    assert merged["crds"] == whole["crds"]
    assert merged["unknownDeclarations"] == whole["unknownDeclarations"] == ["RayCluster:spec.nosuchfield",
                                                                           "RayCluster:spec.other"]
    unread = coverage.section("CRDs not readable: no cluster", set(), set(), keys, exclusions)
    assert not coverage.merged([shards[0], unread])["crdsRead"]
    assert "different CRDs" in coverage.merged([shards[0], coverage.section([], set(), set(), keys, exclusions)])[
        "reason"]


def test_the_exclusions_and_operator_keys_files_are_sound(fields):
    exclusions = coverage.load_exclusions()
    assert exclusions and all(e.reason for e in exclusions)
    for e in exclusions:
        assert any(e.matches(f) for f in fields.values()), f"{e.field} excludes no field of the v1.7.0 RayCluster"
    keys = coverage.load_keys()
    assert set(keys["rayStartParams"]) == {"head", "worker"}
    assert keys["readFrom"]["version"] == "v1.7.0"
    assert all(k.startswith("ray.io/") for kind in keys["annotations"].values() for k in kind)


def test_recordings_reach_the_records_in_the_controller():
    class Report:
        rayconformance_fields = {"set": [["RayCluster", "spec", "suspend"]], "asserted": ["RayCluster:spec.suspend"]}

    records = coverage.FieldRecords()
    records.pytest_runtest_logreport(Report())
    records.pytest_runtest_logreport(object())
    assert records.set_paths == {("RayCluster", "spec", "suspend")} and records.asserted == {"RayCluster:spec.suspend"}


def test_no_cluster_or_an_unreachable_one_is_a_line_in_the_section(tmp_path):
    assert coverage.read_crds(None) == "CRDs not readable: no cluster was brought up"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    why = coverage.read_crds(kubeconfig)
    assert why.startswith("CRDs not readable: ") and "\n" not in why


RUN_TESTS = '''
from unittest import mock

import pytest

from rayconformance.testing import ray
from rayconformance.fieldcov import record


def clusters():
    res = ray.RayResources(None, "ns", "RayCluster")
    res.co = mock.Mock()  # no apiserver: the calls go nowhere
    return res


@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.covers("RayCluster:spec.workerGroupSpecs[].replicas")
def test_provisioning(cluster):
    clusters().create({"metadata": {"name": "c"},
                       "spec": {"rayVersion": "2.9.0", "workerGroupSpecs": [{"replicas": 1}]}})


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    clusters().patch("c", {"spec": {"suspend": True}})
    record.declare("RayCluster:spec.suspend", "RayCluster:spec.nosuchfield")


@pytest.mark.feature("RayClusterAutoscalerV1")
@pytest.mark.covers("RayCluster:spec.enableInTreeAutoscaling")
def test_autoscaler(cluster):
    pytest.skip("not this time")


@pytest.mark.feature("RayJobK8sJobMode")
@pytest.mark.covers("spec.entrypoint")
def test_job(cluster):
    pass
'''

READABLE_CRDS = f'''
import yaml

from rayconformance.fieldcov import coverage

coverage.read_crds = lambda kubeconfig: [yaml.load(open({str(CRD_FILE)!r}), Loader=yaml.CSafeLoader)]
'''


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_run_reports_its_field_coverage(suite, xdist, capsys):
    suite.tests(RUN_TESTS)
    suite.pytester.makeconftest(READABLE_CRDS)  # the fake cluster has no apiserver: its CRDs are read from a file
    result = (suite.run_subprocess if xdist else suite.run)(*xdist, "--all-features")
    result.assert_outcomes(passed=2, skipped=1, errors=1)
    result.stdout.fnmatch_lines(["*covers of test_job: field 'spec.entrypoint' is not Kind:path*",
                                 "field coverage RayCluster: * fields, 3 set (*%), 2 asserted (*%), 1 excluded",
                                 "field coverage: declared fields no CRD has: RayCluster:spec.nosuchfield"])
    data = suite.report()
    jsonschema.Draft202012Validator(json.loads(report.SCHEMA.read_text())).validate(data)
    assert list(data).index("fieldCoverage") == list(data).index("tests") - 1
    (row,) = data["fieldCoverage"]["crds"]
    assert row["setNotAsserted"] == ["spec.rayVersion"]
    assert "spec.enableInTreeAutoscaling" in row["uncovered"]  # its test was skipped: its marker does not count
    assert "Field coverage" in (suite.run_dir / "report.html").read_text()
    capsys.readouterr()
    assert main(["field-coverage", str(suite.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "RayCluster: set, asserted by none (1):\n  spec.rayVersion" in out
    assert "  *:workerGroupSpecs[].rayStartParams[include-dashboard] (" in out


def test_the_command_refuses_a_report_without_the_section_in_one_line(tmp_path, capsys):
    (tmp_path / "conformance-report.yaml").write_text(yaml.safe_dump({"kind": report.KIND, "tests": []}))
    assert main(["field-coverage", str(tmp_path)]) == 1
    assert main(["field-coverage", str(tmp_path / "missing.yaml")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "has no fieldCoverage section" in err[0] and "no such report" in err[1]


def test_the_html_table_and_the_closing_lines_without_crds():
    section = {"crdsRead": False, "reason": "CRDs not readable: no cluster was brought up", "operatorKeys": "k v1"}
    assert show.summary_lines(section) == ["field coverage: CRDs not readable: no cluster was brought up"]
    assert "no cluster was brought up" in show.html_table(section) and show.html_table(None) == ""
    assert show.summary_lines(None) == []


def test_a_failing_measure_is_a_line_in_the_section_not_a_lost_report(monkeypatch):
    def broken(kubeconfig):
        raise KeyError("names")

    monkeypatch.setattr(coverage, "read_crds", broken)
    made = coverage.FieldRecords().section(SimpleNamespace(cluster=SimpleNamespace(kubeconfig="k")))
    assert made == {"crdsRead": False, "reason": "field coverage not computed: 'names'", "operatorKeys": "?"}
