"""RayCluster failure conditions: ReplicaFailure when Pods cannot be created, HeadPodReady after the head is lost and
while it cannot start."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import (condition, condition_must_be, describe_conditions,
                                                          has_condition)
from rayconformance.testing.expect.quotas import resource_quota_must_be_in_force
from rayconformance.testing.expect.workloads import describe_pods
from rayconformance.testing.axes import OWNER_SAMPLES, OWNERS, owned_cluster

QUOTA = "no-pods-allowed"
# an image no node has, with imagePullPolicy Never: it cannot start, and no registry is asked for it
MISSING_IMAGE = "rayconformance/no-such-image:0.0.0"


def head_only(ctx, name: str) -> dict:
    body = ctx.sample("raycluster-basic")
    body["metadata"]["name"] = name
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 0
    return body


@pytest.mark.feature("RayClusterFailureConditions")
@pytest.mark.samples("raycluster-basic")
def test_pod_quota_reports_replica_failure_until_lifted(ctx):
    """When a ResourceQuota in its namespace admits no Pod, a new RayCluster gets no Pods and reports
    ReplicaFailure=True with reason FailedCreateHeadPod and a message naming the quota; once the quota is removed,
    the cluster comes up (RayClusterProvisioned=True, status.state ready) and ReplicaFailure is gone."""
    ctx.core.create_namespaced_resource_quota(ctx.namespace, {"metadata": {"name": QUOTA},
                                                              "spec": {"hard": {"pods": "0"}}})
    resource_quota_must_be_in_force(ctx.k8s, ctx.namespace, QUOTA, {"pods": "0"}, ctx.timeouts.state)
    cluster = ctx.create_raycluster(head_only(ctx, "quota"))

    obj = cluster.must_report_replica_failure("FailedCreateHeadPod")
    message = condition(obj, "ReplicaFailure").get("message") or ""
    assert QUOTA in message, \
        f"the ReplicaFailure message should name the ResourceQuota {QUOTA} that refused the head Pod; observed {message!r}"
    pods = cluster.pods()
    assert not pods, f"no Pod can exist under a quota of 0 Pods; observed {describe_pods(pods)}"

    ctx.core.delete_namespaced_resource_quota(QUOTA, ctx.namespace)
    cluster.must_be_provisioned()
    obj = cluster.must_drop_replica_failure()
    assert ray.status(obj).get("state") == "ready", \
        f"status.state: expected ready once provisioned, observed {ray.status(obj).get('state')!r}"


@pytest.mark.feature("RayClusterFailureConditions")
@pytest.mark.parametrize("owner", OWNERS)
@pytest.mark.samples(*OWNER_SAMPLES)
def test_head_pod_loss_turns_head_pod_ready_false(ctx, owner):
    """When a provisioned RayCluster loses its head Pod, whoever owns it (a user, a RayJob, a RayService),
    HeadPodReady turns False with a reason (the head Pod not found, or the new head not ready yet) while
    RayClusterProvisioned stays True the whole time; once the new head Pod is ready, HeadPodReady is True again,
    in the same RayCluster."""
    owned = owned_cluster(ctx, owner, workers=False)
    cluster = owned.cluster
    old_head = cluster.head_pod()

    with cluster.watch_conditions() as conds:
        ctx.core.delete_namespaced_pod(old_head.metadata.name, ctx.namespace)
        cluster.new_head_must_be_ready(old_head.metadata.uid, ctx.timeouts.long)
        obj = cluster.must_report_head_pod_ready_again(conds.seen)
    conds.must_not_have_failed()
    false = [r for s, r in conds.seen("HeadPodReady") if s == "False"]
    assert all(false), f"HeadPodReady=False must say why (a reason); observed {conds.seen('HeadPodReady')}"
    provisioned = conds.seen("RayClusterProvisioned")
    assert all(s == "True" for s, _ in provisioned), \
        f"RayClusterProvisioned must stay True while the head Pod is replaced; observed over time {provisioned}"
    condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime", when="with the new head")


@pytest.mark.feature("RayClusterHeadStartFailure")
@pytest.mark.samples("raycluster-basic")
def test_unpullable_head_image_is_named_in_head_pod_ready(ctx):
    """A RayCluster whose head container cannot start (its image is not on the node and may not be pulled) reports
    HeadPodReady=False with the head container's own waiting reason (ErrImageNeverPull, not the Pod's generic
    ContainersNotReady) and a message naming the container, and is not reported provisioned or ready."""
    body = head_only(ctx, "unpullable")
    container = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["image"], container["imagePullPolicy"] = MISSING_IMAGE, "Never"
    cluster = ctx.create_raycluster(body)

    obj = cluster.must_report_head_not_starting(("ErrImageNeverPull",))
    message = condition(obj, "HeadPodReady").get("message") or ""
    assert container["name"] in message, (f"HeadPodReady's message should name the head container "
                                          f"{container['name']} that cannot start; observed {message!r}")
    assert not has_condition(obj, "RayClusterProvisioned", "True") and ray.status(obj).get("state") != "ready", \
        (f"a RayCluster whose head cannot start is neither provisioned nor ready; observed state "
         f"{ray.status(obj).get('state')!r}, {describe_conditions(obj)}")
