"""Gang scheduling of a RayCluster on Kubernetes' own scheduler (KubeRay 1.7, alpha gate KubernetesWAS, on a cluster
serving Kubernetes' Workload API: scheduling.k8s.io/v1alpha2, feature gates GenericWorkload and GangScheduling, as
the local-was cluster does). A cluster labelled ray.io/gang-scheduling-enabled gets one Workload and one PodGroup
holding its head and every worker as one gang: all its Pods start together or none does. The gang follows the
cluster's size, survives a suspend, and goes with the cluster; an autoscaling cluster is not gang scheduled."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.gang_scheduling import (gang_must_be, gang_must_be_gone, gang_must_stay,
                                                            gang_must_stay_unplaced, no_gang_must_appear,
                                                            podgroup_must_report_scheduled, pods_must_name, uids)
from rayconformance.testing.expect.workloads import describe_pods, running_and_ready

OPT_IN = "ray.io/gang-scheduling-enabled"
STEADY_S = 10  # how long the gang is watched for a change nothing asked for
UNPLACED_S = 20  # how long a gang that cannot fit is watched for a Pod the scheduler places
NO_NODE_FITS = {"memory": "100000Gi"}  # a request no node of any test cluster can give
MANY_GROUPS = 8  # a template per group and the head's would be 9: a Workload holds at most 8 PodGroup templates


def opted_in(ctx, sample: str) -> dict:
    body = ctx.sample(sample)
    body["metadata"].setdefault("labels", {})[OPT_IN] = "true"
    return body


def podgroup_name(objects: dict) -> str:
    return objects["podgroups"][0]["metadata"]["name"]


@pytest.mark.feature("RayClusterGangScheduling")
@pytest.mark.samples("raycluster-gang")
def test_whole_cluster_is_one_gang(ctx):
    """A gang-scheduled RayCluster with a head, a worker group of 1 and a multi-host group of 1 replica x 2 hosts
    gets one Workload and one PodGroup, both controlled by the cluster, ganging all 4 Pods (each multi-host replica
    counts as many Pods as it has hosts); every Pod names that PodGroup and is left to the default scheduler, the
    scheduler reports the whole gang scheduled, and the cluster is provisioned. Nothing is made twice while it runs,
    and deleting the cluster deletes its Workload and PodGroup."""
    cluster = ctx.create_raycluster("raycluster-gang")
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 4, ctx.timeouts.short,
                           what="a RayCluster of a head, 1 worker and 1 replica of 2 hosts")
    group = podgroup_name(objects)
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, group, 4, ctx.timeouts.pods, what="the cluster's Pods")
    cluster.must_be_provisioned()
    podgroup_must_report_scheduled(ctx.k8s, ctx.namespace, group, ctx.timeouts.short)
    gang_must_stay(ctx.k8s, ctx.namespace, cluster.name, objects, STEADY_S, what="the provisioned cluster")

    cluster.must_be_deleted_and_gone(after="deleting the gang-scheduled RayCluster")
    gang_must_be_gone(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.gone, what="the RayCluster deleted")


@pytest.mark.feature("RayClusterGangScheduling", "RayClusterWorkerGroupSuspend")
@pytest.mark.samples("raycluster-basic")
def test_gang_follows_suspend_and_scaling(ctx):
    """A gang-scheduled RayCluster of a head and 1 worker (a gang of 2) keeps the same Workload and PodGroup while
    suspended and after it resumes, its new Pods naming that PodGroup again. Scaled to 2 workers it gets a new
    Workload and PodGroup ganging 3 Pods, and the new worker runs; scaled back to 1, new ones ganging 2; given a
    second worker group of 1, new ones ganging 3 again, and the group's worker runs. With that second group
    suspended (a worker group's own `suspend`), new ones ganging 2: the group's Pod is deleted while the head and
    the first group's worker keep running (the same Pods), both naming the PodGroup."""
    body = opted_in(ctx, "raycluster-basic")
    cluster = ctx.create_raycluster(body)
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 2, ctx.timeouts.short,
                           what="a RayCluster of a head and 1 worker")
    cluster.must_be_provisioned()

    cluster.patch({"spec": {"suspend": True}})
    cluster.must_be_suspended()
    gang_must_stay(ctx.k8s, ctx.namespace, cluster.name, objects, STEADY_S, what="the suspended cluster")
    cluster.patch({"spec": {"suspend": False}})
    cluster.must_be_resumed()
    gang_must_stay(ctx.k8s, ctx.namespace, cluster.name, objects, 0, what="the resumed cluster")
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 2, ctx.timeouts.pods,
                   what="the resumed cluster's Pods")

    small = body["spec"]["workerGroupSpecs"][0]
    for change, groups in (("scaled to 2 workers", [{**small, "replicas": 2}]),
                           ("scaled back to 1 worker", [small]),
                           ("given a second group of 1 worker", [small, {**small, "groupName": "second"}])):
        workers = sum(g["replicas"] for g in groups)
        before = uids(objects)
        cluster.patch({"spec": {"workerGroupSpecs": groups}})
        objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 1 + workers, ctx.timeouts.short,
                               what=f"the cluster {change}", not_uids=before)
        cluster.workers_must_be_running_and_ready(workers, what=f"the cluster {change}")
        pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 1 + workers, ctx.timeouts.pods,
                       what=f"the Pods of the cluster {change}")

    before, second = uids(objects), {p.metadata.uid for p in cluster.group_pods("second")}
    kept = {p.metadata.uid: p.metadata.name for p in cluster.pods() if p.metadata.uid not in second}
    cluster.patch({"spec": {"workerGroupSpecs": [small, {**small, "groupName": "second", "suspend": True}]}})
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 2, ctx.timeouts.short,
                           what="the cluster with its second group suspended", not_uids=before)
    cluster.group_workers_must_be_running_and_ready("second", 0, what="the suspended group's worker to be deleted")
    cluster.group_workers_must_be_running_and_ready(small["groupName"], 1,
                                                    what="the first group's worker to keep running")
    pods = pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 2, ctx.timeouts.pods,
                          what="the Pods of the cluster with its second group suspended")
    now = {p.metadata.uid: p.metadata.name for p in pods}
    assert now == kept and all(map(running_and_ready, pods)), (
        f"expected the head and the first group's worker to keep running through the second group's suspension "
        f"(the same Pods, Running and Ready: {sorted(kept.values())}); observed {describe_pods(pods)}")


@pytest.mark.feature("RayClusterGangScheduling")
@pytest.mark.samples("raycluster-gang")
def test_many_worker_groups_are_one_gang(ctx):
    """A gang-scheduled RayCluster of a head and 8 worker groups of 1 worker each (a PodGroup template per group and
    the head's would be 9, and a Workload holds at most 8) is still one gang: one Workload and one PodGroup ganging
    all 9 Pods, every Pod naming the PodGroup, and the cluster is provisioned."""
    body = ctx.sample("raycluster-gang")
    small = next(g for g in body["spec"]["workerGroupSpecs"] if g["groupName"] == "small")
    body["spec"]["workerGroupSpecs"] = [{**small, "groupName": f"group-{i}"} for i in range(MANY_GROUPS)]
    cluster = ctx.create_raycluster(body)
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 1 + MANY_GROUPS, ctx.timeouts.short,
                           what=f"a RayCluster of a head and {MANY_GROUPS} worker groups of 1")
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 1 + MANY_GROUPS, ctx.timeouts.pods,
                   what="the cluster's Pods")
    cluster.must_be_provisioned(ctx.timeouts.long)


@pytest.mark.feature("RayClusterGangScheduling", "RayClusterUpgradeStrategyRecreate")
@pytest.mark.samples("raycluster-recreate")
def test_recreate_upgrade_keeps_the_gang(ctx):
    """A gang-scheduled RayCluster with upgradeStrategy Recreate (a head and 1 worker, a gang of 2) whose Pod
    templates change gets a new head and a new worker, and keeps the same Workload and PodGroup: the gang's size did
    not change, so nothing of it is made again, and the new Pods name that PodGroup."""
    cluster = ctx.create_raycluster(opted_in(ctx, "raycluster-recreate"))
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 2, ctx.timeouts.short,
                           what="a RayCluster of a head and 1 worker with upgradeStrategy Recreate")
    cluster.must_be_provisioned()
    old_head, old_workers = cluster.head_pod(), {p.metadata.uid for p in cluster.pods("worker")}

    spec = cluster.get()["spec"]
    for template in [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]:
        template["spec"]["containers"][0]["env"] = [{"name": "CONFORMANCE_REVISION", "value": "2"}]
    cluster.patch({"spec": {"headGroupSpec": spec["headGroupSpec"], "workerGroupSpecs": spec["workerGroupSpecs"]}})
    cluster.new_head_must_be_ready(old_head.metadata.uid, ctx.timeouts.long)
    cluster.replacement_workers_must_be_running_and_ready(old_workers, 1,
                                                          what="the worker to be recreated from the changed template")
    gang_must_stay(ctx.k8s, ctx.namespace, cluster.name, objects, STEADY_S,
                   what="the cluster after its Recreate upgrade")
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 2, ctx.timeouts.pods,
                   what="the recreated Pods")


@pytest.mark.feature("RayClusterGangScheduling")
@pytest.mark.samples("raycluster-basic")
def test_gang_that_cannot_fit_starts_no_pod(ctx):
    """A gang-scheduled RayCluster whose second worker group asks for more memory than any node has starts no Pod
    at all: its head and its other worker, which would fit, stay unscheduled with it, since the gang of 3 cannot be
    placed as a whole."""
    body = opted_in(ctx, "raycluster-basic")
    small = body["spec"]["workerGroupSpecs"][0]
    huge = {**small, "groupName": "huge", "template": {"spec": {"containers": [
        {**small["template"]["spec"]["containers"][0], "resources": {"requests": NO_NODE_FITS}}]}}}
    body["spec"]["workerGroupSpecs"].append(huge)
    cluster = ctx.create_raycluster(body)
    objects = gang_must_be(ctx.k8s, ctx.namespace, cluster.name, 3, ctx.timeouts.short,
                           what="a RayCluster of a head, 1 worker and 1 worker no node fits")
    gang_must_stay_unplaced(ctx.k8s, ctx.namespace, cluster.name, 3, ctx.timeouts.pods, UNPLACED_S)
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, podgroup_name(objects), 3, ctx.timeouts.short,
                   what="the cluster's Pods")


@pytest.mark.feature("RayClusterGangScheduling")
@pytest.mark.samples("raycluster-autoscaler")
def test_autoscaling_cluster_is_not_gang_scheduled(ctx):
    """A RayCluster labelled for gang scheduling but autoscaled by Ray's in-tree autoscaler gets no Workload and no
    PodGroup, and its head Pod names none: it is scheduled Pod by Pod."""
    cluster = ctx.create_raycluster(opted_in(ctx, "raycluster-autoscaler"))
    pods_must_name(ctx.k8s, ctx.namespace, cluster.name, None, 1, ctx.timeouts.pods,
                   what="the autoscaling cluster's head Pod")
    no_gang_must_appear(ctx.k8s, ctx.namespace, cluster.name, STEADY_S, what="an autoscaling RayCluster")
