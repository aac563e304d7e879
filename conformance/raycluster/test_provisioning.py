"""RayCluster provisioning and manual scaling: Pods, head Service, conditions, counts, and Ray's own view."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import alive_ray_nodes, create_provisioned, describe_pods, pods, running_ready


@pytest.mark.feature("RayClusterProvisioning")
def test_head_and_workers_provisioned(k8s, namespace, ray_version, timeouts):
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    rc, obj = create_provisioned(k8s, namespace, body, timeouts.long)

    cond = ray.condition(obj, "RayClusterProvisioned")
    assert cond["reason"] == "AllPodRunningAndReadyFirstTime", f"RayClusterProvisioned reason: {cond}"
    head_cond = ray.condition(obj, "HeadPodReady")
    assert head_cond and head_cond["status"] == "True" and head_cond["reason"] == "HeadPodRunningAndReady", \
        f"expected HeadPodReady=True/HeadPodRunningAndReady, observed {head_cond}"

    heads, workers = pods(k8s, namespace, name, "head"), pods(k8s, namespace, name, "worker")
    assert len(heads) == 1 and all(map(running_ready, heads)), f"expected 1 Running+Ready head, observed {describe_pods(heads)}"
    assert len(workers) == 1 and all(map(running_ready, workers)), \
        f"expected 1 Running+Ready worker in group small, observed {describe_pods(workers)}"
    assert workers[0].metadata.labels.get("ray.io/group") == "small", workers[0].metadata.labels

    status = obj["status"]
    for key, want in (("readyWorkerReplicas", 1), ("desiredWorkerReplicas", 1), ("availableWorkerReplicas", 1)):
        assert status.get(key) == want, f"status.{key}: expected {want}, observed {status.get(key)}"
    head = status.get("head") or {}
    assert head.get("podName") == heads[0].metadata.name, f"status.head.podName {head.get('podName')} != head Pod"

    svc = client.CoreV1Api(k8s).read_namespaced_service(head["serviceName"], namespace)
    ports = {p.name: p.port for p in svc.spec.ports}
    for pname, port in (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001)):
        assert ports.get(pname) == port, f"head Service {svc.metadata.name}: expected port {pname}={port}, observed {ports}"
    assert svc.spec.selector.get("ray.io/cluster") == name and svc.spec.selector.get("ray.io/node-type") == "head", \
        f"head Service selector does not select the head Pod: {svc.spec.selector}"

    wait_for(lambda: ((alive_ray_nodes(k8s, namespace, obj)[0] == 2), True), timeouts.medium,
             "Ray's dashboard (through the head Service) to list 2 alive nodes",
             observe=lambda: alive_ray_nodes(k8s, namespace, obj)[1])


@pytest.mark.feature("RayClusterManualScaling")
def test_manual_scale_up_and_down(k8s, namespace, ray_version, timeouts):
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)

    def workers_ready(n: int):
        ws = pods(k8s, namespace, name, "worker")
        obj = rc.get(name)
        ok = (len(ws) == n and all(map(running_ready, ws))
              and (obj.get("status") or {}).get("readyWorkerReplicas", 0) == n)
        return ok, obj

    def observe():
        obj = rc.get(name) or {}
        return (f"worker Pods: {describe_pods(pods(k8s, namespace, name, 'worker'))}; "
                f"status.readyWorkerReplicas={(obj.get('status') or {}).get('readyWorkerReplicas')}")

    rc.patch(name, {"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": 2}]}})
    obj = wait_for(lambda: workers_ready(2), timeouts.long, "scale up to 2 Running+Ready workers", observe=observe)
    wait_for(lambda: ((alive_ray_nodes(k8s, namespace, obj)[0] == 3), True), timeouts.medium,
             "Ray to list 3 alive nodes after scale-up", observe=lambda: alive_ray_nodes(k8s, namespace, obj)[1])

    rc.patch(name, {"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": 0}]}})
    wait_for(lambda: workers_ready(0), timeouts.medium, "scale down to 0 workers", observe=observe)
    wait_for(lambda: ((alive_ray_nodes(k8s, namespace, obj)[0] == 1), True), timeouts.medium,
             "Ray to list only the head as alive after scale-down",
             observe=lambda: alive_ray_nodes(k8s, namespace, obj)[1])
