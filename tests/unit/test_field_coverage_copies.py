"""Fields asserted through a copy (src/rayconformance/fieldcov/copies.py): an owner's field a test declared copied
counts only when the field it was copied to is asserted in the same run (directly or through another copy), is
reported apart from the fields asserted directly, merges across shards as the whole run would count it, and
bench/fieldcov_static.py reads the declarations (and f-strings) from the sources."""
from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from rayconformance.fieldcov import copies, coverage, record
from rayconformance.fieldcov.copies import Copied
from rayconformance.report import field_coverage as show
from rayconformance.report import results as report

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "fieldcov"
JOB, CLUSTER, CRON = "RayJob:spec.rayClusterSpec", "RayCluster:spec", "RayCronJob:spec.jobTemplate"
NO_EXCLUSIONS: list = []


def load(name: str) -> dict:
    return yaml.load((DATA / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def crds() -> list[dict]:
    """RayCluster and RayJob of v1.7.0, and a RayCronJob whose jobTemplate is a RayJob spec (as v1.7.0's is)."""
    cluster, job = load("ray.io_rayclusters.v1.7.0.yaml"), load("ray.io_rayjobs.v1.7.0.yaml")
    cron = copy.deepcopy(job)
    cron["metadata"]["name"], cron["spec"]["names"]["kind"] = "raycronjobs.ray.io", "RayCronJob"
    schema = cron["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {"type": "object", "properties": {
        "schedule": {"type": "string"}, "jobTemplate": schema["properties"]["spec"]}}
    return [cluster, job, cron]


def section(crds, asserted, copied, **kw):
    return coverage.section(crds, set(), set(asserted), coverage.load_keys(), NO_EXCLUSIONS, copied=set(copied), **kw)


def rows(sec) -> dict[str, dict]:
    return {r["kind"]: r for r in sec["crds"]}


def test_a_copied_field_counts_only_when_its_target_is_asserted_and_apart_from_direct_ones(crds):
    copied = {Copied(JOB, CLUSTER, "headGroupSpec.serviceType"), Copied(JOB, CLUSTER, "headGroupSpec.enableIngress")}
    without = rows(section(crds, {"RayJob:spec.entrypoint"}, copied))["RayJob"]
    assert without["assertedThroughCopy"] == 0 and without["throughCopy"] == []
    sec = section(crds, {"RayJob:spec.entrypoint", "RayCluster:spec.headGroupSpec.serviceType"}, copied)
    job = rows(sec)["RayJob"]
    assert job["asserted"] == without["asserted"] == 1  # direct only
    assert job["throughCopy"] == ["spec.rayClusterSpec.headGroupSpec.serviceType"]
    assert job["assertedThroughCopy"] == 1 and job["assertedThroughCopyPercent"] > 0
    assert "spec.rayClusterSpec.headGroupSpec.serviceType" in job["uncovered"]  # not asserted directly
    assert {"field": "RayJob:spec.rayClusterSpec.headGroupSpec.enableIngress",
            "to": "RayCluster:spec.headGroupSpec.enableIngress"} in sec["copies"]
    text = show.text(sec)
    assert "RayJob: asserted only through a copy (1):\n  spec.rayClusterSpec.headGroupSpec.serviceType -> " \
           "RayCluster:spec.headGroupSpec.serviceType" in text
    unasserted = text.split("RayJob: set by no test, asserted by none")[1].split("RayJob: asserted only")[0]
    assert "headGroupSpec.serviceType" not in unasserted and "headGroupSpec.enableIngress" in unasserted
    assert "1 asserted (" in show.totals(job) and "1 asserted through a copy (" in show.totals(job)
    page = show.html_table(sec)
    assert "asserted through a copy" in page and "RayCluster:spec.headGroupSpec.serviceType" in page


def test_a_copied_path_covers_the_fields_under_it_and_the_node_it_lies_in(crds):
    copied = {Copied(JOB, CLUSTER, "workerGroupSpecs[].template.spec.containers[].env"),
              Copied(JOB, CLUSTER, "autoscalerOptions")}
    asserted = {"RayCluster:spec.workerGroupSpecs[].template", "RayCluster:spec.autoscalerOptions",
                "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].env"}
    through = rows(section(crds, asserted, copied))["RayJob"]["throughCopy"]
    assert "spec.rayClusterSpec.workerGroupSpecs[].template" in through  # the pod template node the env lies in
    assert "spec.rayClusterSpec.workerGroupSpecs[].template.spec.containers[].env" in through
    assert "spec.rayClusterSpec.workerGroupSpecs[].template.spec.containers[].ports" not in through
    assert "spec.rayClusterSpec.autoscalerOptions.image" in through


def test_copies_chain_through_an_owner_of_an_owner(crds):
    cron_copy = Copied(CRON, "RayJob:spec", "rayClusterSpec.headGroupSpec.serviceType")
    job_copy = Copied(JOB, CLUSTER, "headGroupSpec.serviceType")
    target = "RayCluster:spec.headGroupSpec.serviceType"
    assert rows(section(crds, {target}, {cron_copy}))["RayCronJob"]["throughCopy"] == []  # the link is missing
    assert rows(section(crds, {target}, {cron_copy, job_copy}))["RayCronJob"]["throughCopy"] == [
        "spec.jobTemplate.rayClusterSpec.headGroupSpec.serviceType"]
    assert rows(section(crds, set(), {cron_copy, job_copy}))["RayCronJob"]["throughCopy"] == []  # nothing asserted


def test_a_copy_that_covers_no_field_is_an_unknown_declaration(crds):
    sec = section(crds, set(), {Copied(JOB, CLUSTER, "headGroupSpec.nosuchfield")})
    assert sec["unknownDeclarations"] == [
        "RayJob:spec.rayClusterSpec.headGroupSpec.nosuchfield (copied to RayCluster:spec)"]


def test_shards_merge_copies_as_the_whole_run_counts_them(crds):
    copied = {Copied(JOB, CLUSTER, "headGroupSpec.serviceType")}
    one = section(crds, set(), copied)  # the copy is declared here, its target asserted in the other shard
    two = section(crds, {"RayCluster:spec.headGroupSpec.serviceType"}, set())
    whole = section(crds, {"RayCluster:spec.headGroupSpec.serviceType"}, copied)
    merged = coverage.merged([one, two])
    assert rows(one)["RayJob"]["assertedThroughCopy"] == 0
    keys = ("asserted", "assertedThroughCopy", "assertedThroughCopyPercent", "throughCopy")
    assert [{k: r[k] for k in keys} for r in merged["crds"]] == [{k: r[k] for k in keys} for r in whole["crds"]]
    assert merged["copies"] == whole["copies"]
    assert rows(merged)["RayJob"]["throughCopy"] == ["spec.rayClusterSpec.headGroupSpec.serviceType"]
    older = {k: v for k, v in two.items() if k != "copies"}  # a shard of a suite without copies
    older["crds"] = [{k: v for k, v in r.items() if "Copy" not in k} for r in older["crds"]]
    assert rows(coverage.merged([one, older]))["RayJob"]["assertedThroughCopy"] == 1


def test_the_section_with_copies_fits_the_report_schema(crds):
    sec = section(crds, {"RayCluster:spec.headGroupSpec.serviceType"}, {Copied(JOB, CLUSTER, "headGroupSpec")})
    schema = json.loads(report.SCHEMA.read_text())
    jsonschema.Draft202012Validator({**schema["properties"]["fieldCoverage"], "$defs": schema["$defs"]}).validate(sec)


def test_a_test_declares_copies_and_bad_ones_fail_in_one_line(monkeypatch):
    rec = record.Recording()
    monkeypatch.setattr(record._Active, "recording", rec)
    record.declare_copied(JOB, CLUSTER, ("headGroupSpec.serviceType", "workerGroupSpecs[].labels"))
    assert rec.to_report([])["copied"] == [[JOB, CLUSTER, "headGroupSpec.serviceType"],
                                           [JOB, CLUSTER, "workerGroupSpecs[].labels"]]
    for bad in [("RayJob", CLUSTER, ["x"]), (JOB, CLUSTER, "headGroupSpec"), (JOB, CLUSTER, []),
                (JOB, CLUSTER, ["a..b"])]:
        with pytest.raises(pytest.fail.Exception) as e:
            record.declare_copied(*bad)
        assert str(e.value).startswith("declare_copied: ") and "\n" not in str(e.value)

    class Report:
        rayconformance_fields = {"set": [], "asserted": [], "copied": [[JOB, CLUSTER, "headGroupSpec"]]}

    records = coverage.FieldRecords()
    records.pytest_runtest_logreport(Report())
    assert records.copied == {Copied(JOB, CLUSTER, "headGroupSpec")}


@pytest.fixture(scope="module")
def static():
    spec = importlib.util.spec_from_file_location("fieldcov_static", ROOT / "bench" / "fieldcov_static.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = '''
import pytest

AT = {"RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}
PATHS = ("headGroupSpec.serviceType", "workerGroupSpecs[].labels")
CASES = [("a", "RayJob:spec.suspend"), ("b", "RayJob:spec.entrypoint")]


@pytest.mark.parametrize("owner", [pytest.param("RayJob", id="job"), "RayService"])
def test_one(ctx, owner):
    cluster, at = object(), f"{owner}:{AT[owner]}"
    ctx.covers(f"{at}.rayVersion", at + ".suspend", f"{unknown}.x")
    ctx.covers_copied(at, "RayCluster:spec", PATHS)


@pytest.mark.parametrize("case", [pytest.param(c[0], marks=pytest.mark.covers(c[1])) for c in CASES])
def test_two(ctx, case):
    pass
'''


def test_the_static_reader_evaluates_declarations_made_of_data(static, tmp_path):
    (tmp_path / "conformance").mkdir()
    (tmp_path / "src" / "rayconformance" / "testing").mkdir(parents=True)
    (tmp_path / "conformance" / "test_x.py").write_text(SOURCE)
    found, copied = static.declared_in_sources(tmp_path)
    assert found == {"RayJob:spec.rayClusterSpec.rayVersion", "RayJob:spec.rayClusterSpec.suspend",
                     "RayService:spec.rayClusterConfig.rayVersion", "RayService:spec.rayClusterConfig.suspend",
                     "RayJob:spec.suspend", "RayJob:spec.entrypoint"}
    assert copied == {Copied(s, "RayCluster:spec", p) for s in (JOB, "RayService:spec.rayClusterConfig")
                      for p in ("headGroupSpec.serviceType", "workerGroupSpecs[].labels")}


def test_relations_and_the_fixpoint_directly():
    pairs = {("A:spec.x", "B:spec.x"), ("B:spec.x", "C:spec.x"), ("A:spec.y", "B:spec.y")}
    assert copies.through(pairs, {"A:spec.x", "B:spec.x", "A:spec.y", "B:spec.y"}) == {"A:spec.x", "B:spec.x"}
    assert copies.through(pairs, {"A:spec.x", "B:spec.x", "C:spec.x"}) == set()


def test_each_copy_case_declares_only_fields_its_spec_sets_all_of_them_in_the_v1_7_0_crd(crds):
    from rayconformance.fieldcov import paths
    from rayconformance.testing import copied_specs

    fields = {f.segments for f in coverage.crd_fields(crds[0], coverage.load_keys())}
    assert set(copied_specs.COPIED) == set(copied_specs.SPECS)
    for case, declared in copied_specs.COPIED.items():
        spec = copied_specs.cluster_spec(case, "ray:x", "2.60.0")
        assert spec["suspend"] is True, f"{case}: its RayCluster must make no Pod"
        set_paths = {p[1:] for p in paths.body_paths({"spec": spec})}
        for rel in declared:
            segments = paths.split(rel)
            assert any(s[:len(segments)] == segments for s in set_paths), f"{case}: {rel} declared but not set"
            assert ("spec", *segments) in fields, f"{case}: {rel} is no field of the v1.7.0 RayCluster"
        assert "ray:x" in str(spec) and copied_specs.RAY_IMAGE not in str(spec)


def test_each_job_template_declares_only_fields_it_sets_all_in_the_v1_7_0_raycronjob_crd():
    """The RayCronJob copy test's templates (testing/copied_job_templates.py): every declared path set and a field
    of the jobTemplate, EVERY_COPIED their union, and what v1.7.0's RayJob validation refuses together kept apart."""
    from rayconformance.fieldcov import paths
    from rayconformance.testing import copied_job_templates as jobs
    from rayconformance.testing import copied_specs

    cron = load("ray.io_raycronjobs.v1.7.0.yaml")
    fields = {f.segments for f in coverage.crd_fields(cron, coverage.load_keys())}
    assert set(jobs.COPIED) == set(jobs.JOBS) and set(jobs.SPECS) < set(jobs.COPIED)
    for case, declared in jobs.COPIED.items():
        template = jobs.job_template(case, "ray:x", "2.60.0")
        set_paths = {p[1:] for p in paths.body_paths({"spec": template})}
        for rel in declared:
            segments = paths.split(rel)
            assert any(s[:len(segments)] == segments for s in set_paths), f"{case}: {rel} declared but not set"
            assert ("spec", "jobTemplate", *segments) in fields, f"{case}: {rel} is no field of the jobTemplate"
        assert copied_specs.RAY_IMAGE not in str(template), f"{case}: an image not filled in"
        suspended, selector = template.get("suspend"), template.get("clusterSelector")
        assert not suspended or template.get("shutdownAfterJobFinishes"), f"{case}: suspended needs shutdown"
        assert not (suspended and selector), f"{case}: a clusterSelector cannot be suspended"
        rules = (template.get("deletionStrategy") or {}).get("deletionRules")
        assert not (rules and template.get("shutdownAfterJobFinishes")), f"{case}: deletionRules without shutdown"
        assert suspended or template.get("managedBy") == "kueue.x-k8s.io/multikueue", f"{case}: would start"
    assert set(jobs.EVERY_COPIED) == {p for d in jobs.COPIED.values() for p in d}


def test_the_copy_comparison_names_path_expected_and_observed_and_ignores_defaults():
    from rayconformance.testing.expect import copied_spec

    sent = {"a": {"b": 1, "c": [{"d": "x"}]}, "e": ["p", "q"], "f": "v"}
    seen = {"a": {"b": 1, "c": [{"d": "y", "default": 0}], "extra": True}, "e": ["p"]}
    assert copied_spec.differences(sent, seen) == [("a.c[0].d", "x", "y"), ("e", ["p", "q"], ["p"]),
                                                   ("f", "v", copied_spec.ABSENT)]
    cluster = {"metadata": {"name": "c"}, "spec": seen}
    with pytest.raises(AssertionError, match=r"3 value\(s\) differ: spec\.a\.c\[0\]\.d: expected 'x', observed 'y'"):
        copied_spec.cluster_spec_must_be_copied(sent, cluster, owner="RayJob j")
    head = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}}
    observed = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}, {"name": "submitter"}],
                                                        "restartPolicy": "Never"}}}}
    copied_spec.cluster_spec_must_be_copied(head, {"metadata": {"name": "c"}, "spec": observed}, owner="RayJob j",
                                            undo=copied_spec.submitter_sidecar_undone(head))
    with pytest.raises(AssertionError, match="user's containers"):
        copied_spec.cluster_spec_must_be_copied(head, {"metadata": {"name": "c"}, "spec": head}, owner="RayJob j",
                                                undo=copied_spec.submitter_sidecar_undone(head))
