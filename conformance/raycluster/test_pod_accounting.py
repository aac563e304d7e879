"""RayCluster Pod accounting: scaling creates no redundant Pods; scaling down deletes no more Pods than asked, even
while the deleted ones linger; scaleStrategy.workersToDelete deletes exactly the named workers."""
from __future__ import annotations

import pytest

from rayconformance.testing.waiting import wait_until
from rayconformance.testing.watch import PodWatch

GROUP_SIZE = 6
HOLD = "conformance.rayconformance.io/hold"  # a finalizer of the test's own: its Pods linger in Terminating


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
@pytest.mark.samples("raycluster-scaling")
def test_scaling_creates_no_redundant_pods(ctx):
    """Watching a RayCluster's worker Pods from before it exists: its group of six gets exactly six Pods,
    scaling it to zero deletes them and creates none, scaling it back to six creates exactly six new ones; at no
    moment do more than six worker Pods exist that are not being deleted, and the operator's CreatedWorkerPod
    events count the same twelve Pods it created (through events.k8s.io/v1, whose recorder shows a repeat's count
    only when it refreshes the series: at least one event and never more than twelve)."""
    body = ctx.sample("raycluster-scaling")
    cluster = ctx.raycluster(body["metadata"]["name"])

    def scale_to(replicas: int) -> None:
        cluster.patch({"spec": {"workerGroupSpecs": [{**body["spec"]["workerGroupSpecs"][0], "replicas": replicas}]}})

    def settle(count: int, what: str) -> None:
        __tracebackhide__ = True
        try:
            cluster.worker_pods_must_number(count, ctx.timeouts.long, what=what, consecutive=5)
        finally:  # a redundant Pod is the better explanation of a failed wait
            no_more_live_than(pods, GROUP_SIZE, what)

    with cluster.watch_pods() as pods:
        ctx.create_raycluster(body)
        settle(GROUP_SIZE, f"the group's first {GROUP_SIZE} workers")
        created_exactly(pods, GROUP_SIZE, f"bringing up a group of {GROUP_SIZE}")

        scale_to(0)
        settle(0, "scaling the group to 0")
        created_exactly(pods, GROUP_SIZE, "after scaling to 0 (no Pod may be created while scaling down)")

        scale_to(GROUP_SIZE)
        settle(GROUP_SIZE, f"scaling the group back to {GROUP_SIZE}")
        created_exactly(pods, 2 * GROUP_SIZE, f"after scaling {GROUP_SIZE} -> 0 -> {GROUP_SIZE}")
    no_more_live_than(pods, GROUP_SIZE, f"scaling {GROUP_SIZE} -> 0 -> {GROUP_SIZE}")

    cluster.events_must_count("CreatedWorkerPod", 2 * GROUP_SIZE)


def release_held_pods(ctx) -> int:
    """Remove the test's finalizer from every Pod of its namespace that still has it; how many had it."""
    held = [p for p in ctx.core.list_namespaced_pod(ctx.namespace).items if HOLD in (p.metadata.finalizers or [])]
    for pod in held:
        rest = [f for f in pod.metadata.finalizers if f != HOLD]
        ctx.core.patch_namespaced_pod(pod.metadata.name, ctx.namespace, {"metadata": {"finalizers": rest or None}})
    return len(held)


def stop_holding(ctx, cluster) -> None:
    """Delete the RayCluster (its templates carry the finalizer: no Pod may be made with it any more), then release
    its Pods until none is held."""
    cluster.delete()
    wait_until(lambda: release_held_pods(ctx), lambda n: n == 0, "every Pod held by the test's finalizer released",
               ctx.timeouts.medium)


@pytest.mark.feature("RayClusterNoRedundantPods")
@pytest.mark.samples("raycluster-basic")
def test_scaling_down_deletes_one_worker_while_it_lingers(ctx):
    """Lowering a worker group's replicas from 2 to 1 while its Pods are held in Terminating by a finalizer (as
    a storage or log shipper's finalizer can hold them) marks exactly one worker for deletion, never the other
    and never the head, for as long as the marked Pod lingers: the operator waits for it to go rather than count
    it among the group's replicas, and creates no Pod in its place. Once it is released, one worker is left."""
    body = ctx.sample("raycluster-basic")
    group = body["spec"]["workerGroupSpecs"][0]
    group.update(replicas=2, minReplicas=1)
    for spec in (body["spec"]["headGroupSpec"], group):
        spec["template"].setdefault("metadata", {})["finalizers"] = [HOLD]
    cluster = ctx.raycluster(body["metadata"]["name"])
    try:
        with cluster.watch_pods() as workers, cluster.watch_pods("head") as heads:
            # step 1: two workers, every Pod held by the finalizer
            ctx.create_raycluster(body)
            cluster.must_be_provisioned()
            names = sorted(p.metadata.name for p in cluster.workers_must_be_running_and_ready(2, what="2 workers"))

            # step 2: replicas 2 -> 1 marks one worker for deletion
            cluster.patch({"spec": {"workerGroupSpecs": [{**group, "replicas": 1}]}})
            marked = wait_until(lambda: [p.metadata.name for p in cluster.pods("worker") if p.metadata.deletion_timestamp],
                                bool, "replicas 2 -> 1 to mark one worker for deletion", ctx.timeouts.pods)

            # step 3: while it lingers, no other Pod is marked and none is created
            cluster.worker_pods_must_be(names, ctx.timeouts.pods, consecutive=10,
                                        what=f"the group's two workers kept while {marked} lingers in Terminating")
            workers.must_not_have_failed()
            heads.must_not_have_failed()
            deleted = [workers.names[u] for u in workers.deleted]
            assert len(deleted) == 1, \
                (f"replicas 2 -> 1 must mark exactly one worker for deletion while it lingers; observed "
                 f"{len(deleted)} marked ({', '.join(deleted)}); {workers.summary()}")
            assert not heads.deleted, f"scaling workers down must leave the head alone; observed {heads.summary()}"
            assert len(workers.created) == 2, \
                f"no worker Pod may be created while one lingers in Terminating; observed {workers.summary()}"

            # step 4: released, it goes, and the other worker is the group's one replica
            release_held_pods(ctx)
            kept = [n for n in names if n not in deleted]
            cluster.worker_pods_must_be(kept, ctx.timeouts.pods, consecutive=3,
                                        what=f"{deleted[0]} gone once released, {kept[0]} left as the one replica")
    finally:
        stop_holding(ctx, cluster)


@pytest.mark.feature("RayClusterWorkersToDelete")
@pytest.mark.samples("raycluster-basic")
def test_workers_to_delete_removes_exactly_the_named_pod(ctx):
    """Lowering a worker group's replicas from 3 to 2 while naming one of its Pods in
    scaleStrategy.workersToDelete (as the autoscaler does) deletes that Pod and no other: the two remaining
    workers are the same Pods as before, and no Pod is created in its place."""
    body = ctx.sample("raycluster-basic")
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    cluster = ctx.raycluster(body["metadata"]["name"])
    with cluster.watch_pods() as pods:
        ctx.create_raycluster(body)
        cluster.must_be_provisioned()
        workers = cluster.workers_must_be_running_and_ready(3, what="3 workers")
        names = sorted(p.metadata.name for p in workers)
        victim, keep = names[1], [names[0], names[2]]
        before = list(pods.created)

        group = {**body["spec"]["workerGroupSpecs"][0], "replicas": 2, "scaleStrategy": {"workersToDelete": [victim]}}
        cluster.patch({"spec": {"workerGroupSpecs": [group]}})
        cluster.worker_pods_must_be(keep, consecutive=5,
                                    what=f"workersToDelete=[{victim}] with replicas 2 to delete exactly {victim}")
    pods.must_not_have_failed()
    deleted = [pods.names[u] for u in pods.deleted]
    assert deleted == [victim], f"expected only {victim} deleted, observed deletions of {deleted}; {pods.summary()}"
    assert pods.created == before, \
        f"no worker Pod may be created in place of {victim}; {pods.summary()}"
