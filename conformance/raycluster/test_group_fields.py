"""Fields of the head and worker groups as a whole: their Ray resources and node labels (`resources`, `labels`),
the rayStartParams the operator refuses (beside those fields, or in place of fault tolerance options), a suspended worker group, and the defaults of a worker
group's replica bounds with the status counts and resource sums derived from the groups."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.head_service import head_service_must_exist
from rayconformance.testing.expect.raycluster_groups import (group_must_have_no_pods, pods_must_carry_labels,
                                                              pods_must_keep, status_must_report)
from rayconformance.testing.expect.raycluster_nodes import ray_nodes_must_offer

GIB = 1024 ** 3
MAX_INT32 = 2147483647  # maxReplicas' default: no bound


@pytest.mark.feature("RayClusterGroupLabelsAndResources")
@pytest.mark.samples("raycluster-group-fields")
@pytest.mark.covers("RayCluster:spec.headGroupSpec.resources", "RayCluster:spec.headGroupSpec.labels",
                    "RayCluster:spec.workerGroupSpecs[].resources", "RayCluster:spec.workerGroupSpecs[].labels")
def test_group_resources_and_labels_reach_ray_and_pods(ctx):
    """A group's `resources` are what its Ray node offers (CPU, memory and custom resources, the worker's 3 CPUs
    although its container is limited to one), while the container keeps its own Kubernetes limits; a group's
    `labels` are put on its Pods and on its Ray node, and cannot rename the Pods' ray.io/group."""
    body = ctx.sample("raycluster-group-fields")
    head_spec, worker_spec = body["spec"]["headGroupSpec"], body["spec"]["workerGroupSpecs"][0]
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    head, workers = cluster.head_pod(), cluster.pods("worker")

    # step 1: the Pods carry their group's labels; the containers keep their Kubernetes resources
    pods_must_carry_labels([head], head_spec["labels"], why="headGroupSpec.labels")
    pods_must_carry_labels(workers, {**worker_spec["labels"], "ray.io/group": worker_spec["groupName"]},
                           why="workerGroupSpecs[].labels, beside the group's own ray.io/group")
    limits = workers[0].spec.containers[0].resources.limits or {}
    assert str(limits.get("cpu")) == "1", \
        (f"a group's resources are Ray's: the worker container must keep its own limit cpu=1; observed limits "
         f"{limits}")

    # step 2: Ray's nodes offer the groups' resources and carry their labels
    service = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state).metadata.name
    ray_nodes_must_offer(ctx.k8s, ctx.namespace, service, [
        (head, {"resources": {"CPU": 1, "memory": GIB, "head-slot": 2}, "labels": head_spec["labels"]}),
        (workers[0], {"resources": {"CPU": 3, "worker-slot": 1}, "labels": worker_spec["labels"]}),
    ], ctx.timeouts.pods, why="the groups' resources and labels")


REFUSED = [
    # a Ray resource given twice: in the group's resources and in rayStartParams
    pytest.param(("workerGroupSpecs", "rayStartParams", "memory", "1000000000"), "rayStartParams and Resources",
                 marks=pytest.mark.covers("RayCluster:spec.workerGroupSpecs[].resources",
                                          "RayCluster:spec.workerGroupSpecs[].rayStartParams[memory]"),
                 id="worker-memory-beside-resources"),
    # node labels given in rayStartParams instead of the group's labels field
    pytest.param(("headGroupSpec", "rayStartParams", "labels", "conformance-tier=head"), "rayStartParams['labels']",
                 marks=pytest.mark.covers("RayCluster:spec.headGroupSpec.labels",
                                          "RayCluster:spec.headGroupSpec.rayStartParams[labels]"),
                 id="head-labels-in-start-params"),
    pytest.param(("workerGroupSpecs", "rayStartParams", "labels", "conformance-tier=worker"),
                 "rayStartParams['labels']",
                 marks=pytest.mark.covers("RayCluster:spec.workerGroupSpecs[].labels",
                                          "RayCluster:spec.workerGroupSpecs[].rayStartParams[labels]"),
                 id="worker-labels-in-start-params"),
    # a Redis user name in rayStartParams (it belongs to gcsFaultToleranceOptions), with or without fault tolerance
    pytest.param(("headGroupSpec", "rayStartParams", "redis-username", "conformance"),
                 "redis username in rayStartParams",
                 marks=pytest.mark.covers("RayCluster:spec.headGroupSpec.rayStartParams[redis-username]"),
                 id="head-redis-username"),
]


@pytest.mark.feature("RayClusterGroupLabelsAndResources")
@pytest.mark.samples("raycluster-group-fields")
@pytest.mark.parametrize("setting,named", REFUSED)
def test_start_params_the_operator_refuses(ctx, setting, named):
    """A group that gives Ray resources both in its `resources` field and in rayStartParams, node labels in
    rayStartParams instead of its `labels` field, or a head that names a Redis user in rayStartParams makes the
    RayCluster invalid: a Warning event with reason InvalidRayClusterSpec says so, and no Pod is created."""
    group, _, key, value = setting
    body = ctx.sample("raycluster-group-fields")
    spec = body["spec"][group] if group == "headGroupSpec" else body["spec"][group][0]
    spec["rayStartParams"][key] = value
    cluster = ctx.create_raycluster(body)
    cluster.must_be_reported_invalid(named, about=f"rayStartParams {key} in {group}")


def with_second_group(body: dict, **fields) -> dict:
    """raycluster-basic with a second worker group, `other`: a copy of `small` with `fields` set."""
    other = {**body["spec"]["workerGroupSpecs"][0], "groupName": "other", **fields}
    body["spec"]["workerGroupSpecs"].append(other)
    return body


@pytest.mark.feature("RayClusterWorkerGroupSuspend")
@pytest.mark.samples("raycluster-basic")
@pytest.mark.covers("RayCluster:spec.workerGroupSpecs[].suspend")
def test_suspended_worker_group_loses_only_its_pods(ctx):
    """Suspending one worker group deletes that group's Pods and no other (the head and the other group's worker
    stay the same Pods), and the status stops counting it (desired and max workers drop by its share) while the
    cluster stays ready; resuming it brings its worker back and the counts with it."""
    body = with_second_group(ctx.sample("raycluster-basic"), replicas=1, minReplicas=0, maxReplicas=1)
    groups = body["spec"]["workerGroupSpecs"]
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    status_must_report(ctx.k8s, ctx.namespace, cluster.name,
                       {"desiredWorkerReplicas": 2, "maxWorkerReplicas": 4}, ctx.timeouts.state,
                       why="two groups of one worker, maxReplicas 3 and 1")
    kept = {p.metadata.uid: p.metadata.name for p in [*cluster.pods("head"), *cluster.group_pods("small")]}

    # step 1: suspend `other`
    cluster.patch({"spec": {"workerGroupSpecs": [groups[0], {**groups[1], "suspend": True}]}})
    group_must_have_no_pods(ctx.k8s, ctx.namespace, cluster.name, "other", ctx.timeouts.pods,
                            why="workerGroupSpecs[other].suspend true")
    status_must_report(ctx.k8s, ctx.namespace, cluster.name,
                       {"desiredWorkerReplicas": 1, "maxWorkerReplicas": 3}, ctx.timeouts.state,
                       why="group other suspended: only small counts")
    cluster.must_report_state("ready")
    pods_must_keep(cluster.pods(), kept, why="suspending group other must leave the head and group small alone")

    # step 2: resume it
    cluster.patch({"spec": {"workerGroupSpecs": [groups[0], {**groups[1], "suspend": False}]}})
    cluster.group_workers_must_be_running_and_ready("other", 1, what="group other resumed")
    status_must_report(ctx.k8s, ctx.namespace, cluster.name,
                       {"desiredWorkerReplicas": 2, "maxWorkerReplicas": 4}, ctx.timeouts.state,
                       why="group other resumed")
    pods_must_keep(cluster.pods(), kept, why="resuming group other must leave the head and group small alone")


@pytest.mark.feature("RayClusterStatusCounts")
@pytest.mark.samples("raycluster-basic")
@pytest.mark.covers("RayCluster:spec.workerGroupSpecs[].replicas", "RayCluster:spec.workerGroupSpecs[].minReplicas",
                    "RayCluster:spec.workerGroupSpecs[].maxReplicas", "RayCluster:spec.workerGroupSpecs[].numOfHosts",
                    "RayCluster:spec.headGroupSpec.template.spec.containers[].resources",
                    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].resources")
def test_worker_group_defaults_and_the_status_sums(ctx):
    """A worker group that leaves replicas, minReplicas, maxReplicas and numOfHosts unset gets 0, 0, no bound
    (2147483647) and 1 host, and no Pod; the status then counts 0 desired workers, min 0, max 2147483647, and
    desires the head's CPU and memory requests alone. Given 1 replica, the group gets one Pod, counted desired,
    available and ready, and its container's requests join the desired CPU and memory (no GPU anywhere)."""
    body = ctx.sample("raycluster-basic")
    group = body["spec"]["workerGroupSpecs"][0]
    for field in ("replicas", "minReplicas", "maxReplicas"):
        group.pop(field, None)
    cluster = ctx.create_raycluster(body)

    # step 1: the defaults, as stored and as counted
    stored = cluster.get()["spec"]["workerGroupSpecs"][0]
    defaults = {k: stored.get(k) for k in ("replicas", "minReplicas", "maxReplicas", "numOfHosts")}
    assert defaults == {"replicas": 0, "minReplicas": 0, "maxReplicas": MAX_INT32, "numOfHosts": 1}, \
        (f"a worker group leaving its replica fields unset must default to replicas 0, minReplicas 0, maxReplicas "
         f"{MAX_INT32} and numOfHosts 1; observed {defaults}")
    cluster.must_be_provisioned()
    status_must_report(ctx.k8s, ctx.namespace, cluster.name,
                       {"desiredWorkerReplicas": 0, "minWorkerReplicas": 0, "maxWorkerReplicas": MAX_INT32,
                        "availableWorkerReplicas": 0, "desiredCPU": "100m", "desiredMemory": "512Mi",
                        "desiredGPU": "0"}, ctx.timeouts.state,
                       why="one defaulted worker group: no workers, the head's requests alone")
    assert not cluster.pods("worker"), f"replicas 0 must give no worker Pod; observed {cluster.pods('worker')}"

    # step 2: one replica
    cluster.patch({"spec": {"workerGroupSpecs": [{**group, "replicas": 1}]}})
    cluster.workers_must_be_running_and_ready(1, what="replicas 1 on the defaulted group")
    status_must_report(ctx.k8s, ctx.namespace, cluster.name,
                       {"desiredWorkerReplicas": 1, "availableWorkerReplicas": 1, "readyWorkerReplicas": 1,
                        "desiredCPU": "200m", "desiredMemory": "1Gi", "desiredGPU": "0"}, ctx.timeouts.state,
                       why="one worker: its requests (100m, 512Mi) added to the head's")
