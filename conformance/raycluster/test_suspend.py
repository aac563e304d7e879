"""RayCluster suspension: suspending deletes the cluster's Pods and says so in conditions; resuming restores it."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition_must_be
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_resumed, raycluster_must_be_suspended
from rayconformance.fixtures.expect.workloads import describe_pods

from .helpers import create_provisioned


@pytest.mark.feature("RayClusterSuspend")
def test_suspend_and_resume(k8s, namespace, ray_version, timeouts):
    """Suspending a provisioned RayCluster deletes all its Pods and reports RayClusterSuspended (not
    Suspending), HeadPodReady=False/HeadPodNotFound, RayClusterProvisioned=False and state suspended; resuming it
    brings back its head and worker, Provisioned and Ready, and no longer Suspended."""
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)

    rc.patch(name, {"spec": {"suspend": True}})
    obj = raycluster_must_be_suspended(k8s, namespace, name, timeouts.medium)
    condition_must_be(obj, "RayClusterSuspended", "True", "RayClusterSuspended")
    condition_must_be(obj, "RayClusterSuspending", "False", when="once suspended")
    condition_must_be(obj, "HeadPodReady", "False", "HeadPodNotFound", when="while suspended")
    condition_must_be(obj, "RayClusterProvisioned", "False", when="while suspended")
    assert ray.status(obj).get("state") == "suspended", \
        f"status.state: expected suspended, observed {ray.status(obj).get('state')}"

    rc.patch(name, {"spec": {"suspend": False}})
    obj = raycluster_must_be_resumed(k8s, namespace, name, timeouts.long)
    condition_must_be(obj, "HeadPodReady", "True", when="after resume")
    heads, workers = ray.cluster_pods(k8s, namespace, name, "head"), ray.cluster_pods(k8s, namespace, name, "worker")
    assert len(heads) == 1 and len(workers) == 1, \
        f"expected 1 head and 1 worker Pod after resume, observed {describe_pods(heads + workers)}"
