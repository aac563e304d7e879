"""Worker groups as slices (KubeRay's multi-host indexing, the shape of TPU slices): every worker Pod carries its
replica's index, a replaced worker keeps it and a new one takes the lowest free index; a group with numOfHosts > 1
gets its replicas as whole slices of numOfHosts Pods sharing a replica name and index, one Pod per host index, and
is scaled, trimmed and repaired a whole slice at a time."""
from __future__ import annotations

import json
import re

import pytest

from rayconformance.testing.expect.raycluster_slices import (describe_slices, group_pods_must_settle,
                                                              single_host_indices_must_be, slices_must_be_whole, uids)
from rayconformance.testing.programs import program

SAMPLE = "raycluster-multi-host"
TPU_SAMPLE = "raycluster-multi-host-tpu"
AUTOSCALER_SAMPLE = "raycluster-multi-host-autoscaler"
TPU = "google.com/tpu"


def set_group(cluster, group: dict, **fields) -> dict:
    """Patch the cluster's one worker group with `fields` changed; returns the group as sent."""
    group = {**group, **fields}
    cluster.patch({"spec": {"workerGroupSpecs": [group]}})
    return group


@pytest.mark.feature("RayClusterMultiHost")
@pytest.mark.samples(SAMPLE)
def test_single_host_replicas_keep_their_index(ctx):
    """A worker group of 3 single-host replicas (numOfHosts 1, maxReplicas 4) gets 3 Pods labelled with replica
    indices 0, 1 and 2 (ray.io/worker-group-replica-index, no replica name or host index). The Pod of index 1,
    deleted, is replaced by a new Pod of index 1 while the others stay; scaling to 4 adds one Pod, of index 3."""
    body = ctx.sample(SAMPLE)
    group = {**body["spec"]["workerGroupSpecs"][0], "numOfHosts": 1, "replicas": 3, "maxReplicas": 4}
    body["spec"]["workerGroupSpecs"] = [group]
    name = group["groupName"]

    def settle(count: int, what: str, gone=()) -> list:
        return group_pods_must_settle(ctx.k8s, ctx.namespace, cluster.name, name, count, ctx.timeouts.medium,
                                      gone=gone, what=what)

    # step 1: three workers, indices 0..2
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    first = single_host_indices_must_be(settle(3, "the group's 3 workers"), [0, 1, 2],
                                        when="after creating a group of 3")

    # step 2: the deleted worker of index 1 comes back with index 1; the others are kept
    victim = first[1]
    cluster.delete_pod(victim)
    after = single_host_indices_must_be(
        settle(3, f"the deleted worker {victim.metadata.name} (index 1) to be replaced", gone=[victim.metadata.uid]),
        [0, 1, 2], when=f"after deleting {victim.metadata.name} (index 1)")
    assert [after[i].metadata.uid for i in (0, 2)] == [first[i].metadata.uid for i in (0, 2)], \
        (f"deleting the worker of index 1 must leave the workers of indices 0 and 2 alone; before "
         f"{describe_slices(first.values())}, after {describe_slices(after.values())}")

    # step 3: scaling up takes the next index
    set_group(cluster, group, replicas=4)
    scaled = single_host_indices_must_be(settle(4, "scaling the group to 4"), [0, 1, 2, 3],
                                         when="after scaling the group from 3 to 4")
    assert [scaled[i].metadata.uid for i in range(3)] == [after[i].metadata.uid for i in range(3)], \
        (f"scaling 3 -> 4 must add one worker of index 3 and keep the others; before "
         f"{describe_slices(after.values())}, after {describe_slices(scaled.values())}")


@pytest.mark.feature("RayClusterMultiHost")
@pytest.mark.samples(SAMPLE)
def test_multi_host_replicas_come_and_go_as_whole_slices(ctx):
    """A worker group of 2 replicas with numOfHosts 2 (KubeRay's e2e uses 4 hosts; 2 keep the 2-core bed's Pod
    count down and show the same behavior) gets 4 Pods in 2 whole slices: each slice's Pods share one replica name
    (ray.io/worker-group-replica-name) and replica index, with host indices (ray.io/replica-host-index) 0 and 1;
    the slices have indices 0 and 1. Scaling to 1 deletes one whole slice and leaves the other's Pods alone;
    scaling back to 2 adds a whole new slice, of the freed index. Deleting one Pod of a slice takes the whole slice
    with it: the slice comes back, same index, with all its Pods new, while the other slice stays."""
    body = ctx.sample(SAMPLE)
    group = body["spec"]["workerGroupSpecs"][0]
    name, hosts = group["groupName"], group["numOfHosts"]

    def slices(replicas: int, indices, what: str, gone=()) -> dict[int, list]:
        pods = group_pods_must_settle(ctx.k8s, ctx.namespace, cluster.name, name, replicas * hosts,
                                      ctx.timeouts.medium, gone=gone, what=what)
        return slices_must_be_whole(pods, hosts, indices, when=what)

    # step 1: two whole slices, indices 0 and 1
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    first = slices(2, [0, 1], f"the group's 2 slices of {hosts} hosts")

    # step 2: scaling to 1 removes one whole slice; the other is kept as it was
    group = set_group(cluster, group, replicas=1)
    [(kept, kept_pods)] = slices(1, None, "scaling the group to 1 slice").items()
    assert uids(kept_pods) in [uids(ps) for ps in first.values()], \
        (f"scaling 2 -> 1 slices must delete one whole slice and keep the other's Pods; before "
         f"{describe_slices(sum(first.values(), []))}, after {describe_slices(kept_pods)}")

    # step 3: scaling back to 2 adds a whole slice, of the freed index
    group = set_group(cluster, group, replicas=2)
    second = slices(2, [0, 1], "scaling the group back to 2 slices")
    assert uids(second[kept]) == uids(kept_pods), \
        (f"scaling 1 -> 2 slices must add a new slice and keep slice {kept}'s Pods; before "
         f"{describe_slices(kept_pods)}, after {describe_slices(sum(second.values(), []))}")

    # step 4: one deleted Pod takes its whole slice with it; the slice comes back, all new, same index
    hit, spared = 1 - kept, kept
    victim = second[hit][hosts - 1]
    cluster.delete_pod(victim)
    third = slices(2, [0, 1], f"slice {hit} to be recreated after its Pod {victim.metadata.name} was deleted",
                   gone=[victim.metadata.uid])
    survivors = set(uids(second[hit])) & set(uids(third[hit]))
    assert not survivors, \
        (f"deleting {victim.metadata.name} (host {hosts - 1} of slice {hit}) must take the whole slice with it and "
         f"recreate all its {hosts} Pods; slice {hit} before {describe_slices(second[hit])}, after "
         f"{describe_slices(third[hit])} ({len(survivors)} Pod(s) kept)")
    assert uids(third[spared]) == uids(second[spared]), \
        (f"deleting a Pod of slice {hit} must leave slice {spared} alone; before {describe_slices(second[spared])}, "
         f"after {describe_slices(third[spared])}")


def has_tpu_nodes(ctx) -> bool:
    return any(int((n.status.allocatable or {}).get(TPU, "0")) > 0 for n in ctx.core.list_node().items)


def tpu_limit(pod) -> str | None:
    return (pod.spec.containers[0].resources.limits or {}).get(TPU)


@pytest.mark.feature("RayClusterMultiHost")
@pytest.mark.samples(TPU_SAMPLE)
def test_multi_host_tpu_slice_hosts_get_their_chips(ctx):
    """A TPU worker group of one slice of 2 hosts, each limited to 2 google.com/tpu chips (the fake chips of the
    project's device plugin), gets one whole slice of 2 Pods (replica index 0, host indices 0 and 1), each keeping
    its limit and running on a node that offers TPU chips; Ray counts each host's chips (its Ray node offers TPU 2),
    and a task holding them on each host is handed 2 chips of its own. Deleting one host takes the slice with it:
    both hosts come back, new, and get their chips again."""
    if not has_tpu_nodes(ctx):
        pytest.skip(f"no Node offers {TPU}; use a cluster with TPU nodes (--cluster local-tpu or local-gpu)")
    body = ctx.sample(TPU_SAMPLE)
    group = body["spec"]["workerGroupSpecs"][0]
    name, hosts = group["groupName"], group["numOfHosts"]
    chips = int(group["template"]["spec"]["containers"][0]["resources"]["limits"][TPU])

    def slice_must_get_its_chips(what: str) -> list:
        """The slice's hosts Running and Ready, keeping their limit on TPU nodes, with their chips in Ray."""
        pods = cluster.group_workers_must_be_running_and_ready(name, hosts, ctx.timeouts.medium, what=what)
        [(_, slice_pods)] = slices_must_be_whole(pods, hosts, [0], when=what).items()
        for pod in slice_pods:
            offered = int((ctx.core.read_node(pod.spec.node_name).status.capacity or {}).get(TPU, "0"))
            assert tpu_limit(pod) == str(chips) and offered >= chips, \
                (f"{what}: host {pod.metadata.name} must keep its limit {TPU}: {chips} and run on a node offering "
                 f"them; observed limit {tpu_limit(pod)!r} on Node {pod.spec.node_name} offering {offered}")
        ips = [p.status.pod_ip for p in slice_pods]
        logs = cluster.ray_job_must_succeed(program("tpu_probe", ips=ips, chips=chips))
        m = re.search(r"^TPU_HOSTS (.*)$", logs, re.M)
        assert m, f"the Ray job printed no TPU_HOSTS line; logs:\n{logs[-2000:]}"
        seen = json.loads(m.group(1))
        handed = {ip: (seen.get(ip) or {}).get("devices") for ip in ips}
        assert all((seen.get(ip) or {}).get("tpu") == chips for ip in ips) \
            and all(d and len(set(d.split(","))) == chips for d in handed.values()) \
            and len({c for d in handed.values() for c in d.split(",")}) == chips * hosts, \
            (f"{what}: each host's Ray node must offer TPU {chips}, and a task holding them be handed {chips} chips "
             f"of its own (TPU_VISIBLE_DEVICES); observed by host IP {seen}; hosts {describe_slices(slice_pods)}")
        return slice_pods

    # step 1: one whole slice whose hosts have their chips
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    before = slice_must_get_its_chips(f"the slice's {hosts} TPU hosts")

    # step 2: one deleted host takes the slice with it; the new hosts get their chips again
    victim = before[-1]
    cluster.delete_pod(victim)
    group_pods_must_settle(ctx.k8s, ctx.namespace, cluster.name, name, hosts, ctx.timeouts.medium,
                           gone=uids(before), what=f"the TPU slice to be recreated after {victim.metadata.name} "
                                                   f"was deleted (all {hosts} hosts new)")
    slice_must_get_its_chips("the recreated TPU slice")




@pytest.mark.feature("RayClusterMultiHost", "RayClusterMultiHostAutoscaling", "RayClusterAutoscalerV2")
@pytest.mark.samples(AUTOSCALER_SAMPLE)
def test_autoscaler_adds_and_removes_whole_slices(ctx):
    """With Ray's autoscaler (v2) and a multi-host group of fake TPU hosts (numOfHosts 2, each host offering Ray
    TPU 4 through rayStartParams, 0 to 1 replicas; KubeRay's e2e uses 1 and 4 hosts), demand for two hosts' worth of
    TPU (one actor per host) sets replicas to 1 and brings up exactly one whole slice of 2 Pods, one actor on each
    host; once the actors are gone the idle slice is removed whole, no Pod of the group left and none recreated."""
    body = ctx.sample(AUTOSCALER_SAMPLE)
    group = body["spec"]["workerGroupSpecs"][0]
    name, hosts = group["groupName"], group["numOfHosts"]
    chips = json.loads(group["rayStartParams"]["resources"].strip("'"))["TPU"]
    cluster = ctx.raycluster(body["metadata"]["name"])

    with cluster.watch_pods(group=name) as pods:
        # step 1: the cluster comes up without the slice
        ctx.create_raycluster(body)
        cluster.must_be_provisioned()
        assert not pods.live_names(), f"the group (replicas 0) must start with no Pods; observed {pods.summary()}"

        # step 2: one replica of demand brings up one whole slice, each host running one actor
        logs = cluster.ray_job_must_succeed(program("tpu_demand", chips=chips, hosts=hosts,
                                                    wait=int(ctx.timeouts.medium)))
        m = re.search(r"^TPU_ACTORS (.*)$", logs, re.M)
        assert m, f"the Ray job printed no TPU_ACTORS line; logs:\n{logs[-2000:]}"
        placed = json.loads(m.group(1))
        workers = cluster.group_workers_must_be_running_and_ready(
            name, hosts, ctx.timeouts.short, what=f"{hosts} actors needing TPU {chips} each (one replica of demand) to "
                                                  f"bring up one slice of {hosts} hosts")
        [(_, slice_pods)] = slices_must_be_whole(workers, hosts, [0], when="after one replica of demand").items()
        replicas = (cluster.get()["spec"]["workerGroupSpecs"][0]).get("replicas")
        assert replicas == 1, \
            f"one replica of demand must set the group's replicas to 1 (one whole slice); observed {replicas}"
        assert sorted(placed) == sorted(p.status.pod_ip for p in slice_pods), \
            (f"the {hosts} actors (TPU {chips} each) must run one on each host of the slice; observed them on "
             f"{placed}; hosts {describe_slices(slice_pods)}")

        # step 3: without the demand the idle slice goes, whole
        cluster.ray_job_must_succeed(program("tpu_release", hosts=hosts), ctx.timeouts.medium)
        cluster.group_workers_must_be_running_and_ready(name, 0, what="the idle slice to be removed")
    pods.must_not_have_failed()
    assert len(pods.created) == hosts and pods.peak == hosts, \
        f"one replica of demand must bring up exactly one slice of {hosts} Pods, and no other; {pods.summary()}"
