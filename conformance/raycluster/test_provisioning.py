"""RayCluster provisioning and manual scaling: Pods, head Service, conditions, counts, and Ray's own view."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition_must_be
from rayconformance.fixtures.expect.raycluster import (ray_must_list_alive_nodes, raycluster_must_report_ready_workers,
                                                       raycluster_must_report_state)
from rayconformance.fixtures.expect.workloads import describe_pods, running_and_ready

from .helpers import create_provisioned


@pytest.mark.feature("RayClusterProvisioning")
def test_head_and_workers_provisioned(k8s, namespace, ray_version, timeouts):
    """A RayCluster's head and worker Pods become Running and Ready; the cluster reports RayClusterProvisioned
    and HeadPodReady, counts its ready workers, names its head Pod, exposes the head through a Service with the
    GCS, dashboard and client ports, reports status.state ready, and Ray itself lists both nodes as alive."""
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.long)

    condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime")
    condition_must_be(obj, "HeadPodReady", "True", "HeadPodRunningAndReady")
    raycluster_must_report_state(k8s, namespace, name, "ready", timeouts.short)

    heads, workers = ray.cluster_pods(k8s, namespace, name, "head"), ray.cluster_pods(k8s, namespace, name, "worker")
    assert len(heads) == 1 and all(map(running_and_ready, heads)), \
        f"expected 1 Running+Ready head, observed {describe_pods(heads)}"
    assert len(workers) == 1 and all(map(running_and_ready, workers)), \
        f"expected 1 Running+Ready worker in group small, observed {describe_pods(workers)}"
    assert workers[0].metadata.labels.get("ray.io/group") == "small", \
        f"expected the worker Pod labelled ray.io/group=small, observed labels {workers[0].metadata.labels}"

    status = ray.status(obj)
    for key, want in (("readyWorkerReplicas", 1), ("desiredWorkerReplicas", 1), ("availableWorkerReplicas", 1)):
        assert status.get(key) == want, f"status.{key}: expected {want}, observed {status.get(key)}"
    head = status.get("head") or {}
    assert head.get("podName") == heads[0].metadata.name, \
        f"status.head.podName: expected the head Pod {heads[0].metadata.name}, observed {head.get('podName')}"

    svc = client.CoreV1Api(k8s).read_namespaced_service(head["serviceName"], namespace)
    ports = {p.name: p.port for p in svc.spec.ports}
    for pname, port in (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001)):
        assert ports.get(pname) == port, f"head Service {svc.metadata.name}: expected port {pname}={port}, observed {ports}"
    assert svc.spec.selector.get("ray.io/cluster") == name and svc.spec.selector.get("ray.io/node-type") == "head", \
        f"head Service selector does not select the head Pod: {svc.spec.selector}"

    ray_must_list_alive_nodes(k8s, namespace, obj, 2, timeouts.medium)


@pytest.mark.feature("RayClusterManualScaling")
def test_manual_scale_up_and_down(k8s, namespace, ray_version, timeouts):
    """Changing a worker group's replicas scales the RayCluster: up to 2 workers, Running and Ready, counted in
    status.readyWorkerReplicas and alive in Ray; then down to 0, leaving only the head alive in Ray."""
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)

    def scale_to(replicas: int) -> None:
        rc.patch(name, {"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": replicas}]}})

    scale_to(2)
    obj = raycluster_must_report_ready_workers(k8s, namespace, name, 2, timeouts.long, what="scale up to 2")
    ray_must_list_alive_nodes(k8s, namespace, obj, 3, timeouts.medium)

    scale_to(0)
    raycluster_must_report_ready_workers(k8s, namespace, name, 0, timeouts.medium, what="scale down to 0")
    ray_must_list_alive_nodes(k8s, namespace, obj, 1, timeouts.medium)
