"""RayCluster behaviors whoever owns the cluster: a user, a RayJob or a RayService (`testing.axes`). Operators
break where two features meet: a lost Pod must be replaced the same way in a cluster a RayJob or RayService made,
and its owner must carry on with that cluster."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.created import none_must_be_created
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.axes import OWNER_SAMPLES, OWNERS, Owned, owned_cluster


def owner_must_carry_on(owned: Owned, *, after: str) -> None:
    """The owner still runs on the same RayCluster `after` what happened: a RayJob Running with it, a RayService
    Ready and serving from it with no pending cluster."""
    __tracebackhide__ = True
    if owned.owner == "RayJob":
        s = owned.by.status()
        assert (s.get("jobDeploymentStatus"), s.get("rayClusterName")) == ("Running", owned.cluster.name), \
            (f"expected RayJob {owned.by.name} to keep running on RayCluster {owned.cluster.name} after {after}; "
             f"observed jobDeploymentStatus={s.get('jobDeploymentStatus')!r}, rayClusterName="
             f"{s.get('rayClusterName')!r}")
    elif owned.owner == "RayService":
        active, pending = active_and_pending_clusters(owned.by.must_be_ready())
        assert active == owned.cluster.name and not pending, \
            (f"expected RayService {owned.by.name} to keep serving from RayCluster {owned.cluster.name} with no "
             f"pending cluster after {after}; observed active {active!r}, pending {pending!r}")


@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.parametrize("owner", OWNERS)
@pytest.mark.samples(*OWNER_SAMPLES)
def test_lost_worker_pod_is_replaced(ctx, owner):
    """Whoever owns the RayCluster (a user, a RayJob, a RayService), a worker Pod that is lost (deleted at once) is
    replaced: one new Pod of its group comes up Running and Ready, and nothing else changes: the head Pod is the
    same, no other Pod is created or deleted, no other RayCluster is made, and the owner carries on with this
    cluster (the RayJob's job keeps running on it, the RayService keeps serving from it)."""
    owned = owned_cluster(ctx, owner)
    cluster = owned.cluster
    [lost] = cluster.workers_must_be_running_and_ready(1, what=f"the worker of {owned.describe()}")
    head = cluster.head_pod()

    # step 1: the worker Pod is lost; a new one of its group replaces it
    with cluster.watch_pods(node_type=None) as pods, ctx.watch("RayCluster") as clusters:
        before = set(pods.created) | {lost.metadata.uid, head.metadata.uid}
        cluster.delete_pod(lost)
        [new] = cluster.replacement_workers_must_be_running_and_ready(
            [lost.metadata.uid], 1, what=f"the lost worker Pod {lost.metadata.name} of {owned.describe()} to be "
                                         f"replaced")
    pods.must_not_have_failed()

    # step 2: nothing else changed
    group = lost.metadata.labels.get("ray.io/group")
    assert new.metadata.labels.get("ray.io/group") == group, \
        (f"the replacement of worker Pod {lost.metadata.name} must belong to its group {group!r}; observed "
         f"{new.metadata.name} in group {new.metadata.labels.get('ray.io/group')!r}")
    created = [u for u in pods.created if u not in before]
    assert pods.deleted == [lost.metadata.uid] and created == [new.metadata.uid], \
        (f"losing worker Pod {lost.metadata.name} of {owned.describe()} must delete no other Pod and create only its "
         f"replacement; observed {pods.summary()}")
    assert cluster.head_pod().metadata.uid == head.metadata.uid, \
        f"the head Pod {head.metadata.name} must be kept when a worker Pod is lost; observed a new head Pod"
    none_must_be_created(clusters, "RayCluster", through=f"the loss of a worker Pod of {owned.describe()}")

    # step 3: the owner carries on with this cluster
    owner_must_carry_on(owned, after=f"the loss of worker Pod {lost.metadata.name}")
