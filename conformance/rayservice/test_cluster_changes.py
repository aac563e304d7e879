"""Which changes to a RayService's cluster spec replace its RayCluster, and how the old one goes: fields the
autoscaler owns and an appended worker group do not replace it; `upgradeStrategy: None` never does (nor changes
the RayCluster); a Serve config changed with the cluster spec goes to the new RayCluster only; after a NewCluster
upgrade the old cluster stays for rayClusterDeletionDelaySeconds."""
from __future__ import annotations

import copy

import pytest

from rayconformance.testing.expect.rayservice import active_and_pending_clusters

from .helpers import deploy, greeter, with_reply

# How long a test watches for a new RayCluster that must not come. The operator reconciles a changed
# RayService at once (and every 2 s); an upgrade shows a pending RayCluster within one pass.
NO_UPGRADE_WINDOW_S = 20


AUTOSCALER_FIELDS = ("replicas", "minReplicas", "maxReplicas", "scaleStrategy")


def autoscaler_fields(raycluster: dict, group: str) -> dict:
    """The autoscaler-owned fields of worker group `group` of a RayCluster object."""
    spec = next(g for g in raycluster["spec"]["workerGroupSpecs"] if g["groupName"] == group)
    return {k: spec.get(k) for k in AUTOSCALER_FIELDS}


@pytest.mark.feature("RayServiceAutoscalerFields", "RayServiceEvents")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-worker-group")
def test_autoscaler_fields_and_new_worker_group_keep_the_cluster(ctx):
    """Changing only the fields of a RayService's worker group that the autoscaler owns (replicas, minReplicas,
    maxReplicas, scaleStrategy.workersToDelete) starts no upgrade: no pending RayCluster, the same active one,
    whose own values of those fields stay as they were (they are the autoscaler's to change) and which gets no
    worker Pod from them. Appending a worker group updates the running RayCluster in place, again without a new
    one, and the RayService records an UpdatedRayCluster event for it."""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-worker-group"))
    cluster, _ = active_and_pending_clusters(obj)
    spec = obj["spec"]["rayClusterConfig"]
    running = ctx.raycluster(cluster)
    kept = autoscaler_fields(running.get(), "small")

    with service.watch() as watch, running.watch_pods() as workers:
        # step 1: only the autoscaler-owned fields of the worker group change
        group = spec["workerGroupSpecs"][0]
        group.update(replicas=1, minReplicas=1, maxReplicas=3,
                     scaleStrategy={"workersToDelete": [f"{cluster}-small-worker-00000"]})
        changed_at = watch.clock()
        patched = service.patch({"spec": {"rayClusterConfig": spec}})
        service.must_keep_cluster(watch, cluster, patched["metadata"]["generation"], changed_at, NO_UPGRADE_WINDOW_S,
                                  what="changing replicas, minReplicas, maxReplicas and workersToDelete")
        now = autoscaler_fields(running.get(), "small")
        assert now == kept, \
            (f"the autoscaler-owned fields changed in RayService {service.name} must not reach its running "
             f"RayCluster {cluster}: expected its group small to keep {kept}, observed {now}")
        workers.must_not_have_failed()
        assert not workers.created, \
            (f"changing the autoscaler-owned fields of RayService {service.name} must give its RayCluster no worker "
             f"Pod; observed {workers.summary()}")

        # step 2: a worker group appended at the end goes into the running RayCluster
        extra = copy.deepcopy(group)
        extra.update(groupName="extra", replicas=0, minReplicas=0, maxReplicas=1, scaleStrategy={})
        spec["workerGroupSpecs"].append(extra)
        appended_at = watch.clock()
        patched = service.patch({"spec": {"rayClusterConfig": spec}})
        running.must_have_worker_groups(["small", "extra"], ctx.timeouts.medium)
        service.must_keep_cluster(watch, cluster, patched["metadata"]["generation"], appended_at, NO_UPGRADE_WINDOW_S,
                                  what="appending a worker group")
    service.events_must_include(
        [("Normal", "UpdatedRayCluster", f"Updated the active RayCluster {ctx.namespace}/{cluster}")])


@pytest.mark.feature("RayServiceUpgradeStrategyNone")
@pytest.mark.samples("rayservice-greeter")
def test_upgrade_strategy_none_keeps_the_cluster(ctx):
    """With `upgradeStrategy: {type: None}`, a change to a RayService's cluster spec that would otherwise need a
    new RayCluster creates none: the RayService keeps serving from the same RayCluster, with no pending one. A Serve
    config changed in the same update goes to that RayCluster, whose own spec is left as it was (its
    metadata.generation unchanged). (KubeRay's e2e UpdateServeConfigAndRayClusterSpecWithUpgradeDisabled.)"""
    docs = greeter(ctx)
    next(d for d in docs if d["kind"] == "RayService")["spec"]["upgradeStrategy"] = {"type": "None"}
    service, obj = deploy(ctx, docs)
    cluster, _ = active_and_pending_clusters(obj)
    generation = ctx.raycluster(cluster).get()["metadata"]["generation"]

    with service.watch() as watch:
        # step 1: the cluster spec and the reply change in one update: no upgrade
        changed_at = watch.clock()
        patched = service.trigger_upgrade("none", serve_config=with_reply(obj, "v2"))
        service.must_keep_cluster(watch, cluster, patched["metadata"]["generation"], changed_at, NO_UPGRADE_WINDOW_S,
                                  what="a cluster spec change with upgradeStrategy None")
    service.must_have_only_cluster(cluster)

    # step 2: the new reply comes from the same RayCluster, which was not changed
    service.serve_service_must_answer(body=f"v2 from {cluster}")
    ctx.raycluster(cluster).must_keep_spec(generation, through="a cluster spec change with upgradeStrategy None")


# rayClusterDeletionDelaySeconds of the test, and how much earlier than that after the switch (as the watch saw
# it) the old RayCluster may be deleted: the operator counts from its own first look at the switched status.
DELETION_DELAY_S = 30
DELETION_MARGIN_S = 3
DELETION_LATE_S = 30  # how long after the delay the old cluster may still be waiting for its deletion


@pytest.mark.feature("RayServiceClusterDeletionDelay")
@pytest.mark.samples("rayservice-greeter")
def test_old_cluster_outlives_the_switch_by_the_deletion_delay(ctx):
    """After a NewCluster upgrade switches traffic to the new RayCluster, the old RayCluster is kept for
    rayClusterDeletionDelaySeconds (here 30 s) and then deleted, not much later (within 30 s more)."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)

    with service.watch() as services, ctx.watch("RayCluster") as clusters:
        # step 1: upgrade, with the old cluster to be deleted 30 s after the switch
        service.trigger_upgrade("deletion-delay", deletion_delay=DELETION_DELAY_S)
        service.must_switch(old)
        switched = service.switch_must_be_seen(services, old)

        # step 2: the old cluster is not deleted before the delay has passed
        ctx.raycluster(old).must_outlive_the_switch(clusters, switched, DELETION_DELAY_S - DELETION_MARGIN_S,
                                                    delay=DELETION_DELAY_S)

        # step 3: then it is deleted, not long after the delay
        ctx.measure("deletion_delay.deleted_after_switch_s", ctx.raycluster(old).must_go_after_the_delay(
            clusters, switched, DELETION_DELAY_S + DELETION_LATE_S, delay=DELETION_DELAY_S))
    ctx.raycluster(old).must_be_gone(after="rayClusterDeletionDelaySeconds")


@pytest.mark.feature("RayServiceServeConfigWithClusterChange")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-new-cluster", "loadgen")
def test_serve_config_and_cluster_spec_changed_together(ctx):
    """A RayService with `upgradeStrategy: {type: NewCluster}` whose serveConfigV2 and cluster spec change in one
    update gets the new Serve configuration on a new RayCluster only: through the serve Service, under continuous
    traffic from before the update until the new reply answers, only the old reply comes from the old RayCluster
    and only the new one from the new RayCluster; after the switch the old RayCluster (held by a finalizer of the
    test's) still answers with the old reply. (KubeRay's e2e UpdateServeConfigAndRayClusterSpec.)"""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-new-cluster"))
    strategy = obj["spec"].get("upgradeStrategy")
    assert strategy == {"type": "NewCluster"}, \
        f"expected the RayService to keep upgradeStrategy {{type: NewCluster}} as applied; observed {strategy}"
    old, _ = active_and_pending_clusters(obj)
    before, after = f"v1 from {old}", "v2 from {}"
    gen = service.start_traffic()
    kept = ctx.raycluster(old)
    with kept.held():
        # step 1: the reply and the cluster spec change in one update: an upgrade starts
        service.trigger_upgrade("serve-and-cluster", serve_config=with_reply(obj, "v2"))
        service.must_start_upgrade(old)

        # step 2: the new RayCluster takes over, answering with the new reply
        new = service.must_switch(old)
        service.traffic_must_get(gen, after.format(new))
        stats = service.stop_traffic(gen)

        # step 3: the serve Service never gave the new reply from the old RayCluster, nor the old one from the new
        expected = {before, after.format(new)}
        assert set(stats["answers"]) <= expected, \
            (f"through the serve Service, only {before!r} (the old RayCluster, old Serve config) and "
             f"{after.format(new)!r} (the new RayCluster, new Serve config) may answer; observed answers "
             f"{stats['answers']}")

        # step 4: the old RayCluster, kept, still runs the old Serve configuration
        kept.serve_must_answer(before)
    kept.must_be_gone(after="the upgrade, once the test's finalizer was removed")


@pytest.mark.feature("RayServiceUnhealthyThresholdsIgnored")
@pytest.mark.samples("rayservice-greeter")
def test_deprecated_unhealthy_thresholds_change_nothing(ctx):
    """The deprecated serviceUnhealthySecondThreshold and deploymentUnhealthySecondThreshold are accepted, kept as
    given, and change nothing: set to 1 second, far shorter than the Serve application takes to start, the
    RayService still comes up on its first RayCluster (watched from its creation: no other is created) and serves;
    changing them afterwards starts no upgrade."""
    docs = greeter(ctx)
    body = next(d for d in docs if d["kind"] == "RayService")
    body["spec"].update(serviceUnhealthySecondThreshold=1, deploymentUnhealthySecondThreshold=1)
    with ctx.watch("RayCluster") as clusters:
        service, obj = deploy(ctx, docs)
        cluster, _ = active_and_pending_clusters(obj)
        kept = {k: obj["spec"].get(k) for k in ("serviceUnhealthySecondThreshold", "deploymentUnhealthySecondThreshold")}
        assert kept == {"serviceUnhealthySecondThreshold": 1, "deploymentUnhealthySecondThreshold": 1}, \
            f"RayService {service.name} must keep both thresholds as given (1); observed {kept}"
        service.serve_service_must_answer()

        # step 2: changing them starts no upgrade
        with service.watch() as watch:
            changed_at = watch.clock()
            patched = service.patch({"spec": {"serviceUnhealthySecondThreshold": 2,
                                              "deploymentUnhealthySecondThreshold": 2}})
            service.must_keep_cluster(watch, cluster, patched["metadata"]["generation"], changed_at,
                                      NO_UPGRADE_WINDOW_S, what="changing both deprecated thresholds")
    clusters.must_not_have_failed()
    made = sorted({v.name for v in clusters.snapshot() if v.type in ("ADDED", "LISTED")})
    assert made == [cluster], \
        (f"with 1 s unhealthy thresholds RayService {service.name} must come up on its first RayCluster and keep it; "
         f"observed RayClusters {made} created")
