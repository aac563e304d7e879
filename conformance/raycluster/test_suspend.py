"""RayCluster suspension: suspending deletes the cluster's Pods and says so in conditions; resuming restores it."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition_must_be
from rayconformance.fixtures.expect.workloads import describe_pods


@pytest.mark.feature("RayClusterSuspend")
@pytest.mark.samples("raycluster-basic")
def test_suspend_and_resume(ctx):
    """Suspending a provisioned RayCluster deletes all its Pods and reports RayClusterSuspended (not
    Suspending), HeadPodReady=False/HeadPodNotFound, RayClusterProvisioned=False/RayClusterPodsProvisioning and
    state suspended; resuming it brings back its head and worker, RayClusterSuspended=False,
    HeadPodReady=True/HeadPodRunningAndReady and RayClusterProvisioned=True/AllPodRunningAndReadyFirstTime."""
    cluster = ctx.create_raycluster("raycluster-basic")
    cluster.must_be_provisioned()

    cluster.patch({"spec": {"suspend": True}})
    obj = cluster.must_be_suspended()
    condition_must_be(obj, "RayClusterSuspended", "True", "RayClusterSuspended")
    condition_must_be(obj, "RayClusterSuspending", "False", when="once suspended")
    condition_must_be(obj, "HeadPodReady", "False", "HeadPodNotFound", when="while suspended")
    condition_must_be(obj, "RayClusterProvisioned", "False", "RayClusterPodsProvisioning", when="while suspended")
    assert ray.status(obj).get("state") == "suspended", \
        f"status.state: expected suspended, observed {ray.status(obj).get('state')}"

    cluster.patch({"spec": {"suspend": False}})
    obj = cluster.must_be_resumed()
    condition_must_be(obj, "RayClusterSuspended", "False", "RayClusterSuspended", when="after resume")
    condition_must_be(obj, "HeadPodReady", "True", "HeadPodRunningAndReady", when="after resume")
    condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime", when="after resume")
    heads, workers = cluster.pods("head"), cluster.pods("worker")
    assert len(heads) == 1 and len(workers) == 1, \
        f"expected 1 head and 1 worker Pod after resume, observed {describe_pods(heads + workers)}"
