"""Autoscaler v1 and v2 with placement groups, and with worker groups changed while they run: a raised or lowered
maxReplicas, a worker group added to a running cluster. Each case checks, once the autoscaler has acted, that the
one running is the version asked for."""
from __future__ import annotations

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.programs import program
from rayconformance.testing.ray_actors import ask_actors, create_actors, kill_actors, placed


# Detached actors needing one CPU each (the demand), not waited for.
HOLDERS = ["holder-0", "holder-1", "holder-2"]


def autoscaled_cluster(ctx, version: str):
    """The autoscaler sample with autoscaler `version` (group small: 1-CPU workers, 0 to 2, idle after 15 s), up."""
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"]["version"] = version
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    return cluster, body


def set_group(cluster, group: str, **fields) -> None:
    """Change one worker group's fields, the others (and its replicas, which the autoscaler owns) as stored."""
    groups = cluster.get()["spec"]["workerGroupSpecs"]
    next(g for g in groups if g["groupName"] == group).update(fields)
    cluster.patch({"spec": {"workerGroupSpecs": groups}})


@pytest.mark.feature("RayClusterAutoscalerPlacementGroups")
@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler")
def test_placement_group_scales_workers_and_keeps_them(ctx, version):
    """With autoscaler v1 or v2, a placement group whose two half-CPU bundles must be on different nodes (STRICT_SPREAD)
    brings up two 1-CPU workers, one per bundle, though one would have the CPUs for both. While the placement group
    exists its workers are never removed, however long past the idle timeout they run no task; once it is removed they
    are idle, and the autoscaler removes them."""
    cluster, body = autoscaled_cluster(ctx, version)
    idle = body["spec"]["autoscalerOptions"]["idleTimeoutSeconds"]

    # step 1: the placement group's demand brings up one worker per bundle, and the group gets placed
    cluster.ray_job_must_succeed(program("placement_group_place", n=2), ctx.timeouts.medium)
    workers = cluster.workers_must_be_running_and_ready(
        2, ctx.timeouts.upgrade, what="a placement group of 2 STRICT_SPREAD bundles to bring up 2 workers, one each")
    cluster.autoscaler_must_be(version)
    logs = cluster.ray_job_must_succeed(program("placement_group_ready"), ctx.timeouts.medium)
    assert "PG_READY True" in logs, \
        f"the placement group must be placed on the 2 workers it brought up; observed: {logs[-500:]}"

    # step 2: the workers holding it stay, idle three times the idle timeout
    names = sorted(p.metadata.name for p in workers)
    with cluster.watch_pods() as pods:
        cluster.worker_pods_must_be(names, ctx.timeouts.medium, consecutive=3 * idle,
                                    what=f"the workers holding the placement group to stay while it exists, idle "
                                         f"for 3 x idleTimeoutSeconds={idle}")
    pods.must_not_have_failed()
    assert not pods.deleted, \
        (f"no worker holding a placement group may be removed while it exists (idleTimeoutSeconds={idle}); "
         f"observed {pods.summary()}")

    # step 3: once the placement group is gone, its idle workers go
    cluster.ray_job_must_succeed(program("placement_group_remove"), ctx.timeouts.medium)
    cluster.workers_must_be_running_and_ready(0, ctx.timeouts.upgrade,
                                              what="the workers of the removed placement group to be removed as idle")


@pytest.mark.feature("RayClusterAutoscalerSpecChanges")
@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler")
def test_max_replicas_changed_under_demand(ctx, version):
    """With autoscaler v1 or v2 and demand for three 1-CPU workers in a group capped at maxReplicas 2, the group holds 2
    workers; raising maxReplicas to 3 while the demand lasts adds the third (every actor of the demand then runs), and
    lowering it to 1 takes the group down to a single worker, demand or not, never above the cap in force."""
    cluster, body = autoscaled_cluster(ctx, version)
    group = body["spec"]["workerGroupSpecs"][0]["groupName"]

    # step 1: demand for 3 workers, capped at 2
    with cluster.watch_pods() as capped:
        cluster.ray_job_must_succeed(create_actors(HOLDERS), ctx.timeouts.medium)
        cluster.workers_must_be_running_and_ready(2, ctx.timeouts.upgrade,
                                                  what="demand for 3 workers to bring up maxReplicas=2 of them")
        cluster.autoscaler_must_be(version)
    capped.must_not_have_failed()
    assert capped.peak <= 2, f"maxReplicas=2 must cap the group at 2 worker Pods; observed {capped.summary()}"

    # step 2: maxReplicas raised to 3 under the same demand: the third worker comes, every actor runs
    set_group(cluster, group, maxReplicas=3)
    cluster.workers_must_be_running_and_ready(
        3, ctx.timeouts.upgrade, what="maxReplicas raised to 3 to let the capped demand add a third worker")
    logs = cluster.ray_job_must_succeed(ask_actors(HOLDERS), ctx.timeouts.medium)
    assert all(placed(logs).values()), f"with 3 workers all 3 actors of the demand must run; observed: {logs[-500:]}"

    # step 3: maxReplicas lowered to 1 under demand: the group goes down to 1 worker
    before = set(cluster.worker_pods_now())
    with cluster.watch_pods() as lowered:
        set_group(cluster, group, maxReplicas=1)
        cluster.worker_pods_must_number(1, ctx.timeouts.upgrade,
                                        what="maxReplicas lowered to 1 to take the group down to 1 worker")
    lowered.must_not_have_failed()
    new = [uid for uid in lowered.created if uid not in before]
    assert len(lowered.deleted) == 2 and not new, \
        f"lowering maxReplicas from 3 to 1 must delete 2 of the 3 workers and create none; observed {lowered.summary()}"


@pytest.mark.feature("RayClusterAutoscalerSpecChanges")
@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler")
def test_worker_group_added_while_running(ctx, version):
    """With autoscaler v1 or v2, a worker group added to a running cluster (offering a Ray resource of its own, no CPU)
    is scaled for its own demand, and the group that was there keeps being scaled for its: with one worker of the
    first group running an actor, an actor needing the new group's resource brings up a worker of the new group and
    none of the first; a second CPU actor then takes the first group up to 2 workers; once the new group's actor is
    gone its idle worker is removed while the first group keeps its 2 busy workers."""
    cluster, body = autoscaled_cluster(ctx, version)
    first = body["spec"]["workerGroupSpecs"][0]
    gname = first["groupName"]
    added = dict(first, groupName="added", replicas=0, minReplicas=0, maxReplicas=1,
                 rayStartParams=dict(first["rayStartParams"], resources='"{\\"added\\": 1}"', **{"num-cpus": "0"}))

    # step 1: a CPU actor brings up a worker of the first group
    cluster.ray_job_must_succeed(create_actors(["cpu-0"]), ctx.timeouts.medium)
    [running] = cluster.group_workers_must_be_running_and_ready(
        gname, 1, ctx.timeouts.upgrade, what=f"a CPU actor to bring up a worker of group {gname}")
    cluster.autoscaler_must_be(version)

    # step 2: the new group is appended to the running cluster's worker groups (the others as stored)
    groups = cluster.get()["spec"]["workerGroupSpecs"]
    cluster.patch({"spec": {"workerGroupSpecs": groups + [added]}})

    # step 3: demand for the new group's resource brings up a worker of that group only
    with cluster.watch_pods(group=gname) as others:
        cluster.ray_job_must_succeed(create_actors(["added-0"], "num_cpus=0, resources={'added': 1}"),
                                     ctx.timeouts.medium)
        cluster.group_workers_must_be_running_and_ready(
            "added", 1, ctx.timeouts.upgrade, what="an actor needing resource 'added' to bring up a worker of the "
                                                   "worker group added while the cluster ran")
        logs = cluster.ray_job_must_succeed(ask_actors(["added-0"]), ctx.timeouts.medium)
    others.must_not_have_failed()
    assert placed(logs).get("added-0"), \
        f"the actor needing resource 'added' must run on the new group's worker: {logs[-500:]}"
    assert others.created == [running.metadata.uid] and not others.deleted, \
        (f"demand for the new group's resource must bring up no worker of group {gname} (nor remove its one, "
         f"{running.metadata.name}); observed {others.summary()}")

    # step 4: the first group is still scaled for its own demand: a second CPU actor takes it to 2 workers
    cluster.ray_job_must_succeed(create_actors(["cpu-1"]), ctx.timeouts.medium)
    cluster.group_workers_must_be_running_and_ready(
        gname, 2, ctx.timeouts.upgrade,
        what=f"a second CPU actor to take group {gname} up to 2 workers after a group was added")
    logs = cluster.ray_job_must_succeed(ask_actors(["cpu-0", "cpu-1"]), ctx.timeouts.medium)
    assert all(placed(logs).values()), f"both CPU actors must run on group {gname}'s 2 workers: {logs[-500:]}"

    # step 5: without its actor, the new group's worker is idle and goes; the first group's busy workers stay
    with cluster.watch_pods(group=gname) as kept:
        cluster.ray_job_must_succeed(kill_actors(["added-0"]), ctx.timeouts.medium)
        cluster.group_workers_must_be_running_and_ready("added", 0, ctx.timeouts.upgrade,
                                                        what="the added group's idle worker to be removed")
    kept.must_not_have_failed()
    assert not kept.deleted, \
        f"group {gname}'s workers run actors and must stay; observed {kept.summary()}"
