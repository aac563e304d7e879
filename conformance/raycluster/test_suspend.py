"""RayCluster suspension: suspending deletes the cluster's Pods and says so in conditions; resuming restores it."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import condition_must_be
from rayconformance.testing.expect.raycluster_history import (suspended_only_after_pods_stopped,
                                                               suspending_must_come_before_suspended)
from rayconformance.testing.expect.workloads import describe_pods

QUIET_WINDOW_S = 10  # how long a suspended cluster is watched for a Pod it must not create


@pytest.mark.feature("RayClusterSuspend")
@pytest.mark.samples("raycluster-basic")
def test_suspend_and_resume(ctx):
    """Suspending a provisioned RayCluster deletes all its Pods and reports RayClusterSuspended (not
    Suspending), HeadPodReady=False/HeadPodNotFound, RayClusterProvisioned=False/RayClusterPodsProvisioning and
    state suspended; resuming it brings back its head and worker, RayClusterSuspended=False,
    HeadPodReady=True/HeadPodRunningAndReady and RayClusterProvisioned=True/AllPodRunningAndReadyFirstTime.
    Watched from before the suspend: RayClusterSuspending=True comes first, RayClusterSuspended=True only once
    every container of its Pods has stopped, and no Pod is created while it is suspended."""
    cluster = ctx.create_raycluster("raycluster-basic")
    cluster.must_be_provisioned()
    before = {p.metadata.uid for p in cluster.pods()}

    with cluster.watch() as history, ctx.watch_pods(cluster.name, None) as pods:
        cluster.patch({"spec": {"suspend": True}})
        obj = cluster.must_be_suspended()
        condition_must_be(obj, "RayClusterSuspended", "True", "RayClusterSuspended")
        condition_must_be(obj, "RayClusterSuspending", "False", when="once suspended")
        condition_must_be(obj, "HeadPodReady", "False", "HeadPodNotFound", when="while suspended")
        condition_must_be(obj, "RayClusterProvisioned", "False", "RayClusterPodsProvisioning", when="while suspended")
        assert ray.status(obj).get("state") == "suspended", \
            f"status.state: expected suspended, observed {ray.status(obj).get('state')}"
        suspending_must_come_before_suspended(history.snapshot(), cluster.name)
        suspended_only_after_pods_stopped(obj, pods, before)
        # a window in which the suspended cluster must create nothing
        added = pods.first(lambda v: v.obj["metadata"]["uid"] not in before, within=QUIET_WINDOW_S)
        assert added is None, \
            (f"no Pod may be created while RayCluster {cluster.name} is suspended; observed {added.name} "
             f"({added.type} at {added.t:.1f}s of the watch)")
        cluster.patch({"spec": {"suspend": False}})

    obj = cluster.must_be_resumed()
    condition_must_be(obj, "RayClusterSuspended", "False", "RayClusterSuspended", when="after resume")
    condition_must_be(obj, "HeadPodReady", "True", "HeadPodRunningAndReady", when="after resume")
    condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime", when="after resume")
    heads, workers = cluster.pods("head"), cluster.pods("worker")
    assert len(heads) == 1 and len(workers) == 1, \
        f"expected 1 head and 1 worker Pod after resume, observed {describe_pods(heads + workers)}"
