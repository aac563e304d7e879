"""Which changes to a RayService's cluster spec replace its RayCluster, and how the old one goes: fields the
autoscaler owns and an appended worker group do not replace it; `upgradeStrategy: None` never does; after a
NewCluster upgrade the old cluster stays for rayClusterDeletionDelaySeconds."""
from __future__ import annotations

import copy

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, has_switched_from,
                                                       raycluster_must_have_worker_groups, rayservice_must_switch)

from .helpers import ObjectWatch, deploy, distinct_states, trigger_upgrade

# How long a test watches for a new RayCluster that must not come. The operator reconciles a changed
# RayService at once (and every 2 s); an upgrade shows a pending RayCluster within one pass.
NO_UPGRADE_WINDOW_S = 20


def _observed_generation(obj: dict) -> int:
    return ray.status(obj).get("observedGeneration") or 0


def _must_keep_cluster(watch: ObjectWatch, cluster: str, generation: int, since_at: float, what: str) -> None:
    """Watching for NO_UPGRADE_WINDOW_S from `since_at`: the operator observes `generation` and the RayService
    keeps serving from `cluster` with no pending RayCluster."""
    __tracebackhide__ = True
    moved = watch.first(lambda v: active_and_pending_clusters(v.obj) != (cluster, None), NO_UPGRADE_WINDOW_S,
                        since_at=since_at)
    watch.must_not_have_failed()
    seen = "; observed, in order:\n  " + "\n  ".join(distinct_states(watch.snapshot()))
    assert moved is None, (f"{what} must not start an upgrade: expected RayCluster {cluster} active and no pending "
                           f"one for {NO_UPGRADE_WINDOW_S}s, observed at {moved and moved.t:.1f}s active/pending "
                           f"{active_and_pending_clusters(moved and moved.obj)}{seen}")
    observed = watch.first(lambda v: _observed_generation(v.obj) >= generation, 0)
    assert observed is not None, (f"expected the operator to observe generation {generation} ({what}) within "
                                  f"{NO_UPGRADE_WINDOW_S}s (status.observedGeneration){seen}")


@pytest.mark.feature("RayServiceAutoscalerFields")
def test_autoscaler_fields_and_new_worker_group_keep_the_cluster(k8s, namespace, ray_version, timeouts):
    """Changing only the fields of a RayService's worker group that the autoscaler owns (replicas, minReplicas,
    maxReplicas, scaleStrategy.workersToDelete) starts no upgrade: no pending RayCluster, the same active one.
    Appending a worker group updates the running RayCluster in place, again without a new one."""
    greeter = ray.load_sample("rayservice-greeter", ray_version)
    docs = [d for d in greeter if d["kind"] == "ConfigMap"] + ray.load_sample("rayservice-greeter-worker-group",
                                                                              ray_version)
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name, (cluster, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    spec = obj["spec"]["rayClusterConfig"]

    with ObjectWatch(k8s, namespace, "rayservices", name) as watch:
        # step 1: only the autoscaler-owned fields of the worker group change
        group = spec["workerGroupSpecs"][0]
        group.update(replicas=1, minReplicas=1, maxReplicas=3,
                     scaleStrategy={"workersToDelete": [f"{cluster}-small-worker-00000"]})
        changed_at = watch.clock()
        patched = rs.patch(name, {"spec": {"rayClusterConfig": spec}})
        _must_keep_cluster(watch, cluster, patched["metadata"]["generation"], changed_at,
                           "changing replicas, minReplicas, maxReplicas and workersToDelete")

        # step 2: a worker group appended at the end goes into the running RayCluster
        extra = copy.deepcopy(group)
        extra.update(groupName="extra", replicas=0, minReplicas=0, maxReplicas=1, scaleStrategy={})
        spec["workerGroupSpecs"].append(extra)
        appended_at = watch.clock()
        patched = rs.patch(name, {"spec": {"rayClusterConfig": spec}})
        raycluster_must_have_worker_groups(k8s, namespace, cluster, ["small", "extra"], timeouts.medium)
        _must_keep_cluster(watch, cluster, patched["metadata"]["generation"], appended_at,
                           "appending a worker group")


@pytest.mark.feature("RayServiceUpgradeStrategyNone")
def test_upgrade_strategy_none_keeps_the_cluster(k8s, namespace, ray_version, timeouts):
    """With `upgradeStrategy: {type: None}`, a change to a RayService's cluster spec that would otherwise need a
    new RayCluster creates none: the RayService keeps serving from the same RayCluster, with no pending one."""
    docs = ray.load_sample("rayservice-greeter", ray_version)
    next(d for d in docs if d["kind"] == "RayService")["spec"]["upgradeStrategy"] = {"type": "None"}
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name, (cluster, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)

    with ObjectWatch(k8s, namespace, "rayservices", name) as watch:
        changed_at = watch.clock()
        patched = trigger_upgrade(rs, obj, "none")
        _must_keep_cluster(watch, cluster, patched["metadata"]["generation"], changed_at,
                           "a cluster spec change with upgradeStrategy None")
    clusters = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]
    assert clusters == [cluster], f"expected only RayCluster {cluster}, observed {clusters}"


# rayClusterDeletionDelaySeconds of the test, and how much earlier than that after the switch (as the watch saw
# it) the old RayCluster may be deleted: the operator counts from its own first look at the switched status.
DELETION_DELAY_S = 30
DELETION_MARGIN_S = 3


@pytest.mark.feature("RayServiceClusterDeletionDelay")
def test_old_cluster_outlives_the_switch_by_the_deletion_delay(k8s, namespace, ray_version, timeouts):
    """After a NewCluster upgrade switches traffic to the new RayCluster, the old RayCluster is kept for
    rayClusterDeletionDelaySeconds (here 30 s) and then deleted."""
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, (old, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)

    with ObjectWatch(k8s, namespace, "rayservices", name) as services, \
            ObjectWatch(k8s, namespace, "rayclusters") as clusters:
        # step 1: upgrade, with the old cluster to be deleted 30 s after the switch
        trigger_upgrade(rs, obj, "deletion-delay", deletion_delay=DELETION_DELAY_S)
        rayservice_must_switch(k8s, namespace, name, old, timeouts.long)
        switched = services.first(lambda v: has_switched_from(v.obj, old), timeouts.short)
        services.must_not_have_failed()
        assert switched is not None, f"the watch on RayService {name} never saw the switch from {old}"

        # step 2: the old cluster is not deleted before the delay has passed
        window = DELETION_DELAY_S - DELETION_MARGIN_S
        deleted = clusters.first(lambda v: v.obj["metadata"]["name"] == old and (
            v.type == "DELETED" or bool(v.obj["metadata"].get("deletionTimestamp"))), window, since_at=switched.at)
        clusters.must_not_have_failed()
        assert deleted is None, (f"expected RayCluster {old} to be kept for rayClusterDeletionDelaySeconds="
                                 f"{DELETION_DELAY_S} after the switch, observed it deleted "
                                 f"{deleted and deleted.at - switched.at:.1f}s after the switch")

    # step 3: then it goes
    raycluster_must_be_gone(k8s, namespace, old, timeouts.medium, after="rayClusterDeletionDelaySeconds")
