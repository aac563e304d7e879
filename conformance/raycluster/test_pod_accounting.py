"""RayCluster Pod accounting: scaling creates no redundant Pods; scaleStrategy.workersToDelete deletes exactly the
named workers."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_events_must_count
from rayconformance.fixtures.expect.raycluster_pods import worker_pods_must_be, worker_pods_must_number, workers_must_be_running_and_ready

from .helpers import PodWatch, create_provisioned

GROUP_SIZE = 6


def no_more_live_than(pods: PodWatch, limit: int, when: str) -> None:
    __tracebackhide__ = True
    pods.must_not_have_failed()
    assert pods.peak <= limit, \
        (f"{when}: expected at most {limit} live worker Pods at any time (the group's replicas), observed "
         f"{pods.peak} at once: {', '.join(pods.peak_pods)}; {pods.summary()}")


def created_exactly(pods: PodWatch, count: int, when: str) -> None:
    __tracebackhide__ = True
    assert len(pods.created) == count, \
        f"{when}: expected exactly {count} worker Pods created in all, observed {len(pods.created)}: {pods.summary()}"


@pytest.mark.feature("RayClusterNoRedundantPods")
def test_scaling_creates_no_redundant_pods(k8s, namespace, ray_version, timeouts):
    """Watching a RayCluster's worker Pods from before it exists: its group of six gets exactly six Pods,
    scaling it to zero deletes them and creates none, scaling it back to six creates exactly six new ones; at no
    moment do more than six worker Pods exist that are not being deleted, and the operator's CreatedWorkerPod
    events count the same twelve Pods it created."""
    body = ray.sample("raycluster-scaling", ray_version)
    name = body["metadata"]["name"]
    rc = ray.RayResources(k8s, namespace, "RayCluster")

    def scale_to(replicas: int) -> None:
        rc.patch(name, {"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": replicas}]}})

    def settle(count: int, what: str) -> None:
        __tracebackhide__ = True
        try:
            worker_pods_must_number(k8s, namespace, name, count, timeouts.long, what=what, consecutive=5)
        finally:  # a redundant Pod is the better explanation of a failed wait
            no_more_live_than(pods, GROUP_SIZE, what)

    with PodWatch(k8s, namespace, name) as pods:
        rc.create(body)
        settle(GROUP_SIZE, f"the group's first {GROUP_SIZE} workers")
        created_exactly(pods, GROUP_SIZE, f"bringing up a group of {GROUP_SIZE}")

        scale_to(0)
        settle(0, "scaling the group to 0")
        created_exactly(pods, GROUP_SIZE, "after scaling to 0 (no Pod may be created while scaling down)")

        scale_to(GROUP_SIZE)
        settle(GROUP_SIZE, f"scaling the group back to {GROUP_SIZE}")
        created_exactly(pods, 2 * GROUP_SIZE, f"after scaling {GROUP_SIZE} -> 0 -> {GROUP_SIZE}")
    no_more_live_than(pods, GROUP_SIZE, f"scaling {GROUP_SIZE} -> 0 -> {GROUP_SIZE}")

    raycluster_events_must_count(k8s, namespace, name, "CreatedWorkerPod", 2 * GROUP_SIZE, timeouts.short)


@pytest.mark.feature("RayClusterWorkersToDelete")
def test_workers_to_delete_removes_exactly_the_named_pod(k8s, namespace, ray_version, timeouts):
    """Lowering a worker group's replicas from 3 to 2 while naming one of its Pods in
    scaleStrategy.workersToDelete (as the autoscaler does) deletes that Pod and no other: the two remaining
    workers are the same Pods as before, and no Pod is created in its place."""
    body = ray.sample("raycluster-basic", ray_version)
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    name = body["metadata"]["name"]
    with PodWatch(k8s, namespace, name) as pods:
        rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
        workers = workers_must_be_running_and_ready(k8s, namespace, name, 3, timeouts.long, what="3 workers")
        names = sorted(p.metadata.name for p in workers)
        victim, keep = names[1], [names[0], names[2]]
        before = list(pods.created)

        group = {**body["spec"]["workerGroupSpecs"][0], "replicas": 2, "scaleStrategy": {"workersToDelete": [victim]}}
        rc.patch(name, {"spec": {"workerGroupSpecs": [group]}})
        worker_pods_must_be(k8s, namespace, name, keep, timeouts.medium, consecutive=5,
                            what=f"workersToDelete=[{victim}] with replicas 2 to delete exactly {victim}")
    pods.must_not_have_failed()
    deleted = [pods.names[u] for u in pods.deleted]
    assert deleted == [victim], f"expected only {victim} deleted, observed deletions of {deleted}; {pods.summary()}"
    assert pods.created == before, \
        f"no worker Pod may be created in place of {victim}; {pods.summary()}"
