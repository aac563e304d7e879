"""GCS fault tolerance with an external Redis: Ray state survives the loss of the head Pod; cleanup on delete."""
from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import create_provisioned, describe_pods, pods, run_ray_job, running_ready

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
    wait_for(lambda: ((p := core.read_namespaced_pod(name, namespace)).status.phase in ("Succeeded", "Failed"), p),
             timeout, "the redis-cli Pod to finish", observe=lambda: core.read_namespaced_pod(name, namespace).status.phase)
    out = core.read_namespaced_pod_log(name, namespace).strip()
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    return int(out.split()[-1])


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_detached_actor_survives_head_pod_deletion(k8s, namespace, ray_version, timeouts, redis):
    body = ray.sample("raycluster-gcs-ft", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    svc = obj["status"]["head"]["serviceName"]
    old_head = pods(k8s, namespace, name, "head")[0]
    old_storage_ns = old_head.metadata.annotations.get("ray.io/external-storage-namespace")

    logs = run_ray_job(k8s, namespace, svc, INCREMENT.format(ns=ACTOR_NS, get=CREATE), timeouts.long)
    assert counter_value(logs) == 1, f"first increment of the detached actor printed {counter_value(logs)}; logs: {logs[-500:]}"

    client.CoreV1Api(k8s).delete_namespaced_pod(old_head.metadata.name, namespace)
    new_head = wait_for(lambda: ((hs := [p for p in pods(k8s, namespace, name, "head")
                                        if p.metadata.uid != old_head.metadata.uid and running_ready(p)]) != [],
                                 hs[0] if hs else None),
                        timeouts.long, "a new head Pod (new UID) to be Running and Ready",
                        observe=lambda: describe_pods(pods(k8s, namespace, name)))
    assert new_head.metadata.annotations.get("ray.io/external-storage-namespace") == old_storage_ns, \
        (f"the new head must reuse the Redis storage namespace {old_storage_ns!r}; observed "
         f"{new_head.metadata.annotations.get('ray.io/external-storage-namespace')!r}")
    workers = pods(k8s, namespace, name, "worker")
    assert len(workers) == 1, f"the worker should have survived the head failure: {describe_pods(workers)}"

    try:
        logs = run_ray_job(k8s, namespace, svc, INCREMENT.format(ns=ACTOR_NS, get=GET), timeouts.long)
    except AssertionError as e:
        raise AssertionError(f"the detached actor must survive the head failure and keep its state (expected 2), "
                             f"but the job looking it up did not succeed: {e}") from None
    assert counter_value(logs) == 2, \
        f"the detached actor must keep its state across the head failure (expected 2), observed {counter_value(logs)}"



@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_delete_cleans_redis_and_removes_cluster(k8s, namespace, ray_version, timeouts, redis):
    body = ray.sample("raycluster-gcs-ft", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
    assert redis_dbsize(k8s, namespace, timeouts.medium) > 0, "the RayCluster's GCS wrote nothing to Redis"

    rc.delete(name)
    wait_for(lambda: (rc.get(name) is None, True), timeouts.long, f"RayCluster {name} to be gone after deletion",
             observe=lambda: (rc.get(name) or {}).get("metadata", {}).get("finalizers"))
    size = redis_dbsize(k8s, namespace, timeouts.medium)
    assert size == 0, f"deleting the RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"


@pytest.mark.feature("RayClusterGCSFaultTolerance")
def test_invalid_configuration_gets_warning_event(k8s, namespace, ray_version, timeouts, redis):
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    body = ray.sample("raycluster-gcs-ft", ray_version)
    body["metadata"]["name"] = "gcsft-invalid"
    # the password must come from gcsFaultToleranceOptions, not from rayStartParams
    body["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"] = "literal"
    rc.create(body)
    core = client.CoreV1Api(k8s)

    def warning():
        evs = [e for e in core.list_namespaced_event(namespace).items
               if e.involved_object.name == "gcsft-invalid" and e.type == "Warning"]
        return bool(evs), evs

    evs = wait_for(warning, timeouts.medium, "a Warning event about the invalid GCS fault tolerance spec",
                   observe=lambda: [(e.reason, e.message) for e in core.list_namespaced_event(namespace).items])
    assert any("redis-password" in (e.message or "") for e in evs), \
        f"the Warning event should name the offending field redis-password: {[(e.reason, e.message) for e in evs]}"
    assert not pods(k8s, namespace, "gcsft-invalid"), "an invalid RayCluster must not get Pods"
