"""GCS fault tolerance with an external Redis: Ray state survives the loss of the head Pod; cleanup on delete."""
from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.events import warning_events_must_be_recorded
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.raycluster_pods import head_must_restart_in_place, head_restarts, new_head_must_be_ready
from rayconformance.fixtures.expect.raycluster_ray import ray_job_must_succeed
from rayconformance.fixtures.expect.workloads import describe_pods, pod_must_finish

from .helpers import WatchLog, create_provisioned

FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"

ACTOR_NS = "rayconformance"
# Runs inside the Ray cluster as a Ray job (python -c); single quotes only, no shell metacharacters.
INCREMENT = """
import ray
ray.init(namespace='{ns}')

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n

c = {get}
print('COUNTER', ray.get(c.inc.remote()))
"""
CREATE = "Counter.options(name='counter', lifetime='detached', max_restarts=-1).remote()"
GET = "ray.get_actor('counter')"


def job_complete(job: dict) -> bool:
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def deletion_step(kind: str, obj: dict) -> str:
    """What a watch event of the deletion shows, in short."""
    meta = obj["metadata"]
    if kind == "Job":
        return f"{meta['name']} {'Complete' if job_complete(obj) else 'running'}"
    return f"{meta['name']} finalizers={meta.get('finalizers') or []}" + (" deleting" if meta.get("deletionTimestamp") else "")


def counter_value(logs: str) -> int | None:
    for line in logs.splitlines():
        if line.startswith("COUNTER "):
            return int(line.split()[1])
    return None


def redis_dbsize(k8s, namespace: str, timeout: float) -> int:
    """DBSIZE of the external Redis, read by a short-lived Pod (no exec needed)."""
    core = client.CoreV1Api(k8s)
    name = f"dbsize-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "cli", "image": "redis:7.4.0",
            "command": ["sh", "-c", "redis-cli -h redis --no-auth-warning -a \"$PW\" DBSIZE"],
            "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "redis-password", "key": "password"}}}]}]}})
    pod_must_finish(k8s, namespace, name, timeout, what="the redis-cli Pod")
    out = core.read_namespaced_pod_log(name, namespace).strip()
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    return int(out.split()[-1])


def detached_actor_must_keep_its_state(k8s, namespace: str, svc: str, what: str, timeout: float) -> None:
    """The detached counter actor, looked up again after `what`, answers its second increment with 2."""
    __tracebackhide__ = True
    try:
        logs = ray_job_must_succeed(k8s, namespace, svc, INCREMENT.format(ns=ACTOR_NS, get=GET), timeout)
    except AssertionError as e:
        raise AssertionError(f"the detached actor must survive the {what} and keep its state (expected 2), "
                             f"but the job looking it up did not succeed: {e}") from None
    assert counter_value(logs) == 2, \
        f"the detached actor must keep its state across the {what} (expected 2), observed {counter_value(logs)}"


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_detached_actor_survives_head_pod_deletion(k8s, namespace, ray_version, timeouts, redis):
    """With GCS fault tolerance backed by Redis, deleting the head Pod brings a new head that reuses the same
    Redis storage namespace, the worker survives, and a detached actor keeps its state across the failure."""
    body = ray.sample("raycluster-gcs-ft", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    svc = obj["status"]["head"]["serviceName"]
    old_head = ray.cluster_pods(k8s, namespace, name, "head")[0]
    old_storage_ns = old_head.metadata.annotations.get("ray.io/external-storage-namespace")

    logs = ray_job_must_succeed(k8s, namespace, svc, INCREMENT.format(ns=ACTOR_NS, get=CREATE), timeouts.long)
    assert counter_value(logs) == 1, f"first increment of the detached actor printed {counter_value(logs)}; logs: {logs[-500:]}"

    client.CoreV1Api(k8s).delete_namespaced_pod(old_head.metadata.name, namespace)
    new_head = new_head_must_be_ready(k8s, namespace, name, old_head.metadata.uid, timeouts.long)
    assert new_head.metadata.annotations.get("ray.io/external-storage-namespace") == old_storage_ns, \
        (f"the new head must reuse the Redis storage namespace {old_storage_ns!r}; observed "
         f"{new_head.metadata.annotations.get('ray.io/external-storage-namespace')!r}")
    workers = ray.cluster_pods(k8s, namespace, name, "worker")
    assert len(workers) == 1, f"the worker should have survived the head failure: {describe_pods(workers)}"

    detached_actor_must_keep_its_state(k8s, namespace, svc, "head failure", timeouts.long)


# Runs on the head as a Ray job: kills the head's GCS server process (single quotes only).
KILL_GCS = """
import os, signal
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        comm = open('/proc/' + pid + '/comm').read().strip()
    except OSError:
        continue
    if comm == 'gcs_server':
        print('KILLING', pid, flush=True)
        os.kill(int(pid), signal.SIGKILL)
"""


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_gcs_crash_inside_head_keeps_detached_actor(k8s, namespace, ray_version, timeouts, redis):
    """With GCS fault tolerance, when the GCS process inside the head crashes, the head's Ray container restarts
    in the same Pod (the operator does not replace the Pod), the worker stays, and a detached actor keeps its
    state: its GCS comes back from Redis."""
    body = ray.sample("raycluster-gcs-ft", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    svc = obj["status"]["head"]["serviceName"]
    head = ray.cluster_pods(k8s, namespace, name, "head")[0]
    worker_uids = sorted(p.metadata.uid for p in ray.cluster_pods(k8s, namespace, name, "worker"))

    # step 1: a detached actor with state
    logs = ray_job_must_succeed(k8s, namespace, svc, INCREMENT.format(ns=ACTOR_NS, get=CREATE), timeouts.long)
    assert counter_value(logs) == 1, f"first increment of the detached actor printed {counter_value(logs)}; logs: {logs[-500:]}"

    # step 2: the GCS process dies inside the head; its container restarts in the same Pod
    code, answer = ray.submit_job(k8s, namespace, svc, f'python -c "{KILL_GCS}"', f"rc-kill-gcs-{uuid.uuid4().hex[:6]}")
    assert code == 200, f"the Jobs API refused the job that stops the GCS: HTTP {code} {answer[:300]}"
    head_must_restart_in_place(k8s, namespace, name, head.metadata.uid, head_restarts(head), timeouts.long)

    # step 3: the worker stayed, and the detached actor kept its state
    workers = sorted(p.metadata.uid for p in ray.cluster_pods(k8s, namespace, name, "worker"))
    assert workers == worker_uids, f"the worker Pods must stay through a GCS restart: before {worker_uids}, after {workers}"
    detached_actor_must_keep_its_state(k8s, namespace, svc, "GCS crash", timeouts.long)


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_delete_cleans_redis_and_removes_cluster(k8s, namespace, ray_version, timeouts, redis):
    """Deleting a RayCluster with GCS fault tolerance keeps it, held by the operator's Redis cleanup finalizer,
    until the operator's Redis cleanup Job has completed; only then is the RayCluster removed, and its data is
    gone from Redis."""
    body = ray.sample("raycluster-gcs-ft", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
    assert redis_dbsize(k8s, namespace, timeouts.medium) > 0, "the RayCluster's GCS wrote nothing to Redis"

    log = WatchLog().add("RayCluster", client.CustomObjectsApi(k8s).list_namespaced_custom_object, ray.GROUP,
                         ray.VERSION, namespace, "rayclusters", field_selector=f"metadata.name={name}"
                         ).add("Job", client.BatchV1Api(k8s).list_namespaced_job, namespace,
                               label_selector=f"ray.io/cluster={name}")
    with log:
        rc.delete(name)
        raycluster_must_be_gone(k8s, namespace, name, timeouts.long, after="its deletion (and its Redis cleanup)")
    assert not log.errors, f"could not watch the deletion: {log.errors}"
    timeline = log.timeline(deletion_step)
    deleting = log.first("RayCluster", lambda typ, o: bool(o["metadata"].get("deletionTimestamp")))
    assert deleting and FINALIZER in (deleting[3]["metadata"].get("finalizers") or []), \
        f"the RayCluster being deleted must carry the finalizer {FINALIZER}; observed: {timeline}"
    cleaned = log.first("Job", lambda typ, o: job_complete(o))
    gone = log.first("RayCluster", lambda typ, o: typ == "DELETED")
    assert cleaned and gone and cleaned[0] <= gone[0], \
        (f"the RayCluster must stay until its Redis cleanup Job has completed, and only then go; observed "
         f"{'no completed cleanup Job' if not cleaned else 'the RayCluster gone first'}: {timeline}")
    size = redis_dbsize(k8s, namespace, timeouts.medium)
    assert size == 0, f"deleting the RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"


def invalid_spec_must_be_reported(k8s, namespace: str, name: str, field: str, timeout: float, about: str) -> None:
    """RayCluster `name` gets a Warning event with reason InvalidRayClusterSpec naming `field`, and no Pods."""
    __tracebackhide__ = True
    evs = warning_events_must_be_recorded(k8s, namespace, name, timeout, about=about)
    assert any(e.reason == "InvalidRayClusterSpec" and field in (e.message or "") for e in evs), \
        (f"expected a Warning event with reason InvalidRayClusterSpec naming the offending field {field}, "
         f"observed {[(e.reason, e.message) for e in evs]}")
    pods = ray.cluster_pods(k8s, namespace, name)
    assert not pods, f"an invalid RayCluster must not get Pods; observed {describe_pods(pods)}"


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_invalid_configuration_gets_warning_event(k8s, namespace, ray_version, timeouts, redis):
    """A RayCluster whose GCS fault tolerance is misconfigured (a Redis password in rayStartParams) gets a
    Warning event naming the offending field, and no Pods."""
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    body = ray.sample("raycluster-gcs-ft", ray_version)
    body["metadata"]["name"] = "gcsft-invalid"
    # the password must come from gcsFaultToleranceOptions, not from rayStartParams
    body["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"] = "literal"
    rc.create(body)

    invalid_spec_must_be_reported(k8s, namespace, "gcsft-invalid", "redis-password", timeouts.medium,
                                  about="the invalid GCS fault tolerance spec of RayCluster gcsft-invalid")


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_redis_address_without_fault_tolerance_options_is_invalid(k8s, namespace, ray_version, timeouts):
    """A RayCluster whose head sets RAY_REDIS_ADDRESS (which would turn on GCS fault tolerance implicitly) without
    gcsFaultToleranceOptions gets a Warning event with reason InvalidRayClusterSpec naming RAY_REDIS_ADDRESS, and
    no Pods."""
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    body = ray.sample("raycluster-gcs-ft", ray_version)
    body["metadata"]["name"] = "redis-implicit"
    del body["spec"]["gcsFaultToleranceOptions"]
    body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]
    rc.create(body)

    invalid_spec_must_be_reported(k8s, namespace, "redis-implicit", "RAY_REDIS_ADDRESS", timeouts.medium,
                                  about="RAY_REDIS_ADDRESS without gcsFaultToleranceOptions")


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_deprecated_annotation_enables_fault_tolerance(k8s, namespace, ray_version, timeouts, redis):
    """The deprecated way of turning on GCS fault tolerance still works: a RayCluster annotated
    ray.io/ft-enabled=true whose head names the Redis in RAY_REDIS_ADDRESS comes up with its head Pod marked
    fault tolerant (ray.io/ft-enabled=true, a Redis storage namespace), its GCS keeps its state in that Redis,
    and deleting the cluster cleans that state out of Redis."""
    body = ray.sample("raycluster-gcs-ft-annotation", ray_version)
    name = body["metadata"]["name"]
    rc, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    assert FINALIZER in (obj["metadata"].get("finalizers") or []), \
        f"the RayCluster must get the Redis cleanup finalizer {FINALIZER}; observed {obj['metadata'].get('finalizers')}"
    head = ray.cluster_pods(k8s, namespace, name, "head")[0]
    notes = head.metadata.annotations or {}
    assert notes.get("ray.io/ft-enabled") == "true" and notes.get("ray.io/external-storage-namespace"), \
        ("the head Pod must be annotated ray.io/ft-enabled=true with a ray.io/external-storage-namespace; observed "
         f"{ {k: v for k, v in notes.items() if k.startswith('ray.io/')} }")
    size = redis_dbsize(k8s, namespace, timeouts.medium)
    assert size > 0, f"the GCS must keep its state in Redis (DBSIZE > 0); observed DBSIZE {size}"

    rc.delete(name)
    raycluster_must_be_gone(k8s, namespace, name, timeouts.long, after="its deletion (and its Redis cleanup)")
    size = redis_dbsize(k8s, namespace, timeouts.medium)
    assert size == 0, f"deleting the RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"
