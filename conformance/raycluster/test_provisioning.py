"""RayCluster provisioning and manual scaling: Pods, head Service, conditions, counts, and Ray's own view."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import condition_must_be
from rayconformance.testing.expect.raycluster_history import (conditions_must_follow_ready_pods,
                                                               state_must_turn_ready_once_provisioned)
from rayconformance.testing.expect.workloads import describe_pods, running_and_ready


@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.samples("raycluster-basic")
def test_head_and_workers_provisioned(ctx):
    """A RayCluster's head and worker Pods become Running and Ready; the cluster reports RayClusterProvisioned
    and HeadPodReady, counts its ready workers, names its head Pod, exposes the head through a Service with the
    GCS, dashboard and client ports, reports status.state ready, and Ray itself lists both nodes as alive. Watched
    from its creation: RayClusterProvisioned turns True only once every Pod is Ready (HeadPodReady once the head
    is), status.state turns ready only once provisioned, and stays ready."""
    body = ctx.sample("raycluster-basic")
    cluster = ctx.raycluster(body["metadata"]["name"])
    with cluster.watch() as history:
        ctx.create_raycluster(body)
        obj = cluster.must_be_provisioned()
        cluster.must_report_state("ready")

        condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime")
        condition_must_be(obj, "HeadPodReady", "True", "HeadPodRunningAndReady")

        heads, workers = cluster.pods("head"), cluster.pods("worker")
        assert len(heads) == 1 and all(map(running_and_ready, heads)), \
            f"expected 1 Running+Ready head, observed {describe_pods(heads)}"
        assert len(workers) == 1 and all(map(running_and_ready, workers)), \
            f"expected 1 Running+Ready worker in group small, observed {describe_pods(workers)}"
        conditions_must_follow_ready_pods(obj, heads + workers)
        assert workers[0].metadata.labels.get("ray.io/group") == "small", \
            f"expected the worker Pod labelled ray.io/group=small, observed labels {workers[0].metadata.labels}"

        status = ray.status(obj)
        for key, want in (("readyWorkerReplicas", 1), ("desiredWorkerReplicas", 1), ("availableWorkerReplicas", 1)):
            assert status.get(key) == want, f"status.{key}: expected {want}, observed {status.get(key)}"
        head = status.get("head") or {}
        assert head.get("podName") == heads[0].metadata.name, \
            f"status.head.podName: expected the head Pod {heads[0].metadata.name}, observed {head.get('podName')}"

        svc = cluster.head_service()
        ports = {p.name: p.port for p in svc.spec.ports}
        for pname, port in (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001)):
            assert ports.get(pname) == port, f"head Service {svc.metadata.name}: expected port {pname}={port}, observed {ports}"
        assert svc.spec.selector.get("ray.io/cluster") == cluster.name \
            and svc.spec.selector.get("ray.io/node-type") == "head", \
            f"head Service selector does not select the head Pod: {svc.spec.selector}"

        cluster.ray_must_list_alive_nodes(2)
    history.must_not_have_failed()
    state_must_turn_ready_once_provisioned(history.snapshot(), cluster.name)


@pytest.mark.feature("RayClusterManualScaling")
@pytest.mark.samples("raycluster-basic")
def test_manual_scale_up_and_down(ctx):
    """Changing a worker group's replicas scales the RayCluster: up to 2 workers, Running and Ready, counted in
    status.readyWorkerReplicas and alive in Ray; then down to 0, leaving only the head alive in Ray."""
    body = ctx.sample("raycluster-basic")
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    def scale_to(replicas: int) -> None:
        cluster.patch({"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": replicas}]}})

    scale_to(2)
    cluster.must_report_ready_workers(2, what="scale up to 2")
    cluster.ray_must_list_alive_nodes(3)

    scale_to(0)
    cluster.must_report_ready_workers(0, ctx.timeouts.medium, what="scale down to 0")
    cluster.ray_must_list_alive_nodes(1)
