"""RayCluster fields set through a RayJob, where the RayJob's controller treats them its own way: the head Services
(the RayCluster's, and the RayJob's own `<name>-head-svc` made from the same spec), GCS fault tolerance turned on
by the RayJob's annotations (and refused beside gcsFaultToleranceOptions), an upgradeStrategy its RayCluster refuses,
and rayClusterSpec changed on a running RayJob, which its RayCluster does not follow."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.events import warning_events_must_be_recorded
from rayconformance.testing.expect.rayjob_fields import (rayjob_cluster_must_keep_its_spec,
                                                          services_must_select_head)
from rayconformance.testing.handles.redis import ADMIN_SECRET

FT_ENABLED = "ray.io/ft-enabled"
STORAGE_NS = "ray.io/external-storage-namespace"
# How long a RayJob's RayCluster is watched after its rayClusterSpec changed.
UNCHANGED_WINDOW_S = 30


@pytest.mark.feature("RayJobHeadServices")
@pytest.mark.samples("rayjob-basic")
def test_cluster_spec_shapes_both_head_services(ctx):
    """A RayJob whose rayClusterSpec names a custom head Service (headGroupSpec.headService with a name and an
    annotation of its own), headServiceAnnotations and serviceType NodePort gets a RayCluster whose head Service has
    that name, type and both annotations, and, beside it, the RayJob's own head Service `<name>-head-svc` of the same
    type, both routing to the head Pod; the RayJob reaches Ray's dashboard through the custom-named Service
    (status.dashboardURL) and its job succeeds."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "shaped-services"
    spec = body["spec"]
    spec["shutdownAfterJobFinishes"] = False
    cluster_spec = spec["rayClusterSpec"]
    cluster_spec["headServiceAnnotations"] = {"rayconformance.io/from": "headServiceAnnotations"}
    cluster_spec["headGroupSpec"]["serviceType"] = "NodePort"
    cluster_spec["headGroupSpec"]["headService"] = {
        "metadata": {"name": "custom-head", "annotations": {"rayconformance.io/own": "headService"}}}
    job = ctx.create_rayjob(body)

    # step 1: the job reaches Ray through the custom-named head Service and succeeds
    cluster = job.must_create_its_cluster()
    obj = job.must_succeed()
    url = ray.status(obj).get("dashboardURL") or ""
    assert url.startswith("custom-head."), \
        f"expected RayJob {job.name} to reach the dashboard through head Service custom-head; observed dashboardURL {url!r}"

    # step 2: both head Services are NodePort Services routing to the head Pod
    assert cluster.head_service_name() == "custom-head", \
        (f"expected RayCluster {cluster.name} to name its head Service as headGroupSpec.headService does, custom-head; "
         f"observed {cluster.head_service_name()!r}")
    own = f"{job.name}-head-svc"
    services = services_must_select_head(ctx.k8s, ctx.namespace, ["custom-head", own], cluster.head_pod(), "NodePort",
                                         ctx.timeouts.state)

    # step 3: the RayCluster's head Service carries both annotations
    notes = services["custom-head"].metadata.annotations or {}
    wanted = {"rayconformance.io/from": "headServiceAnnotations", "rayconformance.io/own": "headService"}
    assert all(notes.get(k) == v for k, v in wanted.items()), \
        f"expected head Service custom-head to carry the annotations {wanted}; observed {notes}"
    ctx.covers("RayJob:spec.rayClusterSpec.headGroupSpec.serviceType",
               "RayJob:spec.rayClusterSpec.headGroupSpec.headService",
               "RayJob:spec.rayClusterSpec.headServiceAnnotations")


def annotated_fault_tolerant_job(ctx, storage_namespace: str) -> dict:
    """samples/rayjob-basic with GCS fault tolerance the deprecated way: the RayJob annotated ray.io/ft-enabled and
    ray.io/external-storage-namespace, its head naming samples/redis.yaml's Redis in RAY_REDIS_ADDRESS with the
    password as $REDIS_PASSWORD from the Redis's Secret."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "annotated-ft"
    body["metadata"]["annotations"] = {FT_ENABLED: "true", STORAGE_NS: storage_namespace}
    spec = body["spec"]
    spec["shutdownAfterJobFinishes"] = False
    head = spec["rayClusterSpec"]["headGroupSpec"]
    head["rayStartParams"]["redis-password"] = "$REDIS_PASSWORD"
    head["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"},
        {"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": ADMIN_SECRET, "key": "password"}}}]
    return body


@pytest.mark.feature("RayJobFaultToleranceAnnotations", "RayClusterGCSFaultTolerance")
@pytest.mark.samples("rayjob-basic")
def test_annotations_make_the_jobs_cluster_fault_tolerant(ctx, redis):
    """A RayJob annotated ray.io/ft-enabled=true and ray.io/external-storage-namespace, whose head names a Redis,
    gets a RayCluster carrying both annotations whose head Pod is marked fault tolerant in that storage namespace;
    its GCS keeps its state in the Redis under that namespace, and the job succeeds."""
    storage = "rayjob-annotated"
    job = ctx.create_rayjob(annotated_fault_tolerant_job(ctx, storage))

    # step 1: the job succeeds on its RayCluster
    cluster = job.must_create_its_cluster()
    job.must_succeed()

    # step 2: the RayCluster and its head Pod carry fault tolerance in the namespace asked for
    notes = (cluster.get() or {}).get("metadata", {}).get("annotations") or {}
    assert notes.get(FT_ENABLED) == "true" and notes.get(STORAGE_NS) == storage, \
        (f"expected RayCluster {cluster.name} to carry its RayJob's annotations {FT_ENABLED}=true and "
         f"{STORAGE_NS}={storage}; observed { {k: v for k, v in notes.items() if k.startswith('ray.io/')} }")
    head = (cluster.head_pod().metadata.annotations or {})
    assert head.get(FT_ENABLED) == "true" and head.get(STORAGE_NS) == storage, \
        (f"expected the head Pod of RayCluster {cluster.name} to be marked {FT_ENABLED}=true with {STORAGE_NS}="
         f"{storage}; observed { {k: v for k, v in head.items() if k.startswith('ray.io/')} }")

    # step 3: its GCS state is in the Redis, under that namespace
    redis.must_hold_keys_of(storage, whose=f"RayCluster {cluster.name} of RayJob {job.name}")
    ctx.covers("RayJob:metadata.annotations[ray.io/ft-enabled]",
               "RayJob:metadata.annotations[ray.io/external-storage-namespace]")


# (case id, the annotation set beside rayClusterSpec.gcsFaultToleranceOptions)
BESIDE_OPTIONS = [("ft-enabled", FT_ENABLED, "true"), ("external-storage-namespace", STORAGE_NS, "elsewhere")]


@pytest.mark.feature("RayJobFaultToleranceAnnotations", "RayJobValidation")
@pytest.mark.samples("rayjob-basic")
@pytest.mark.parametrize("annotation", BESIDE_OPTIONS, ids=[c[0] for c in BESIDE_OPTIONS])
def test_annotation_beside_fault_tolerance_options_is_refused(ctx, annotation):
    """A RayJob annotated ray.io/ft-enabled or ray.io/external-storage-namespace whose rayClusterSpec also sets
    gcsFaultToleranceOptions (two ways of configuring one thing) reports ValidationFailed with a Warning event, and
    no RayCluster is created for it."""
    case, key, value = annotation
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = f"refused-{case}"
    body["metadata"]["annotations"] = {key: value}
    body["spec"]["rayClusterSpec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    why = f"annotation {key} beside rayClusterSpec.gcsFaultToleranceOptions"
    job = ctx.create_rayjob(body)

    job.must_fail_validation(why=why)
    warnings = warning_events_must_be_recorded(ctx.k8s, ctx.namespace, job.name, ctx.timeouts.state,
                                               about=f"RayJob {job.name}'s {why}")
    assert any(key in (e.message or "") for e in warnings), \
        f"expected a Warning event naming {key}; observed {[e.message for e in warnings]}"
    clusters = [c["metadata"]["name"] for c in ctx.resources("RayCluster").list()]
    assert not clusters, f"a RayJob refused for {why} must create no RayCluster; observed {clusters}"
    ctx.covers({FT_ENABLED: "RayJob:metadata.annotations[ray.io/ft-enabled]",
                STORAGE_NS: "RayJob:metadata.annotations[ray.io/external-storage-namespace]"}[key])


@pytest.mark.feature("RayJobClusterUpgradeStrategyRefused")
@pytest.mark.samples("rayjob-basic")
@pytest.mark.covers("RayJob:spec.rayClusterSpec.upgradeStrategy.type")
def test_cluster_upgrade_strategy_is_refused_for_a_rayjob(ctx):
    """A RayJob whose rayClusterSpec sets upgradeStrategy (Recreate: a RayCluster's own way of taking a new spec,
    for a cluster its user owns) gets its RayCluster refused: a Warning event InvalidRayClusterSpec naming
    upgradeStrategy and no Pod, and the job does not start (jobDeploymentStatus stays Initializing)."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "upgrade-strategy"
    body["spec"]["rayClusterSpec"]["upgradeStrategy"] = {"type": "Recreate"}
    job = ctx.create_rayjob(body)

    cluster = job.must_create_its_cluster()
    cluster.must_be_reported_invalid("upgradeStrategy", about="upgradeStrategy set on a RayJob's RayCluster")
    state = ray.status(job.get()).get("jobDeploymentStatus")
    assert state in (None, "", "Initializing"), \
        f"a RayJob whose RayCluster is refused must not start; observed jobDeploymentStatus={state!r}"


@pytest.mark.feature("RayJobClusterSpecKept", "RayJobHTTPMode")
@pytest.mark.samples("rayjob-deletion-rules")
def test_running_job_keeps_its_cluster_when_cluster_spec_changes(ctx):
    """The rayClusterSpec of a running RayJob is read once, when its RayCluster is made: changing it (the worker
    group's replicas 1 -> 2, a variable added to the head container) leaves the RayCluster at its generation with
    the same Pods, and the job runs on."""
    body = ctx.sample("rayjob-deletion-rules")
    body["metadata"]["name"] = "spec-changed-while-running"
    spec = body["spec"]
    spec.pop("deletionStrategy")
    spec.update(submissionMode="HTTPMode", shutdownAfterJobFinishes=False,
                entrypoint="python -c \"import time; print('rayconformance long job started', flush=True); "
                           "time.sleep(900)\"")
    job = ctx.create_rayjob(body)

    # step 1: the job runs on its RayCluster (head and one worker)
    cluster = job.must_create_its_cluster()
    job.must_be_running()
    cluster.must_be_provisioned()
    generation = cluster.get()["metadata"]["generation"]
    pods = {p.metadata.uid for p in cluster.pods() if not p.metadata.deletion_timestamp}

    # step 2: the RayJob's cluster spec changes
    changed = job.get()["spec"]["rayClusterSpec"]
    changed["workerGroupSpecs"][0].update(replicas=2, maxReplicas=2)
    changed["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAYCONFORMANCE_ADDED", "value": "later"}]
    job.patch({"spec": {"rayClusterSpec": changed}})

    # step 3: the RayCluster keeps its spec and Pods, and the job runs on
    rayjob_cluster_must_keep_its_spec(ctx.k8s, ctx.namespace, cluster.name, generation, pods, UNCHANGED_WINDOW_S,
                                      through="the running RayJob's rayClusterSpec changed")
    job.must_be_running(ctx.timeouts.short)
    ctx.covers("RayJob:spec.rayClusterSpec.workerGroupSpecs[].replicas")
