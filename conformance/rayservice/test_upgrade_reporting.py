"""What a user sees of a NewCluster upgrade: the RayService's conditions through it, and the events the operator
records about it."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import condition
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import states_seen
from rayconformance.testing.watch import Version

from .helpers import deploy


def _state_problems(v: Version) -> list[str]:
    """What is wrong with one observed RayService version during an upgrade, if anything."""
    obj, problems = v.obj, []
    active, pending = active_and_pending_clusters(obj)
    ready, upgrade = condition(obj, "Ready") or {}, condition(obj, "UpgradeInProgress") or {}
    got = f"{upgrade.get('status')}/{upgrade.get('reason')}"
    if ready.get("status") != "True":
        problems.append(f"Ready={ready.get('status')}/{ready.get('reason')} (expected True throughout)")
    running = ray.status(obj).get("serviceStatus") == "Running"
    if running != (ready.get("status") == "True"):
        problems.append(f"serviceStatus={ray.status(obj).get('serviceStatus')!r} with Ready={ready.get('status')} "
                        "(expected 'Running' exactly when Ready=True)")
    if active and pending and got != "True/BothActivePendingClustersExist":
        problems.append(f"UpgradeInProgress={got} with an active and a pending RayCluster "
                        "(expected True/BothActivePendingClustersExist)")
    if active and not pending and got != "False/NoPendingCluster":
        problems.append(f"UpgradeInProgress={got} with no pending RayCluster (expected False/NoPendingCluster)")
    return problems


@pytest.mark.feature("RayServiceUpgradeConditions")
@pytest.mark.samples("rayservice-greeter")
def test_upgrade_progress_shows_in_conditions(ctx):
    """Through a NewCluster upgrade a RayService says what it is doing: UpgradeInProgress is False
    (NoPendingCluster) before, True (BothActivePendingClustersExist) while the new RayCluster is pending and
    False again after the switch; Ready stays True the whole time, and serviceStatus is Running exactly when
    Ready is True. Every version of the RayService is watched through the upgrade."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)

    # step 1: watch every version of the RayService while it upgrades to a new RayCluster
    with service.watch() as watch:
        service.trigger_upgrade("conditions")
        service.must_start_upgrade(old)
        new = service.must_switch(old)
        # the version that completed the switch has been seen by the watch too
        watch.first(lambda v: active_and_pending_clusters(v.obj) == (new, None), ctx.timeouts.short)
    watch.must_not_have_failed()

    # step 2: the observed sequence: before, during, after; Ready and serviceStatus throughout
    versions = watch.snapshot()
    seen = states_seen(watch)
    problems = [f"{v.t:.1f}s: {p}" for v in versions for p in _state_problems(v)]
    pairs = [active_and_pending_clusters(v.obj) for v in versions]
    if not pairs or pairs[0] != (old, None):
        problems.append(f"the first version does not serve from {old} alone")
    if not any(a == old and p for a, p in pairs):
        problems.append(f"no version showed {old} active with a pending RayCluster")
    if pairs and pairs[-1] != (new, None):
        problems.append(f"the last version does not serve from {new} alone")
    assert not problems, "the RayService's conditions through the upgrade are wrong:\n  " + \
        "\n  ".join(problems[:10]) + seen


@pytest.mark.feature("RayServiceEvents")
@pytest.mark.samples("rayservice-greeter")
def test_upgrade_is_recorded_in_events(ctx):
    """The operator records what it does for a RayService as events a user reads with `kubectl describe
    rayservice`: creating each RayCluster and the head and serve Services, updating the Serve applications on
    each cluster, switching the Services to the new cluster in an upgrade, and deleting the old cluster."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)

    # step 1: upgrade to a new RayCluster and wait until the old one is gone
    service.trigger_upgrade("events")
    new = service.must_switch(old)
    ctx.raycluster(old).must_be_gone(after="the upgrade")

    # step 2: each step is an event about the RayService
    namespace = ctx.namespace
    head_svc, serve_svc = f"{namespace}/{service.name}-head-svc", f"{namespace}/{ray.serve_service(obj)}"
    expected = [("Normal", "CreatedRayCluster", f"Created the RayCluster {namespace}/{old}"),
                ("Normal", "CreatedService", f"Created the service {head_svc}"),
                ("Normal", "CreatedService", f"Created the service {serve_svc}"),
                ("Normal", "UpdatedServeApplications", f"Updated serve applications to the RayCluster {namespace}/{old}"),
                ("Normal", "CreatedRayCluster", f"Created the RayCluster {namespace}/{new}"),
                ("Normal", "UpdatedServeApplications", f"Updated serve applications to the RayCluster {namespace}/{new}"),
                ("Normal", "UpdatedService", f"Updated the service {head_svc}"),
                ("Normal", "UpdatedService", f"Updated the service {serve_svc}"),
                ("Normal", "DeletedRayCluster", f"Deleted the RayCluster {namespace}/{old}")]
    service.events_must_include(expected)


@pytest.mark.feature("RayServiceHeadServiceSwitch")
@pytest.mark.samples("rayservice-greeter")
def test_head_service_follows_the_active_cluster(ctx):
    """A RayService's head Service (`<name>-head-svc`) routes to the head Pod of its active RayCluster, as its serve
    Service routes to that cluster's Pods. Through a NewCluster upgrade both Services move to the new RayCluster,
    each once and neither back, and then the head Service routes to exactly the new head Pod. The namespace's
    Services are watched from before the upgrade until both have moved."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)

    # step 1: before the upgrade both Services select the active RayCluster, the head Service only its head Pod
    service.services_must_select(old)

    with service.watch_services() as services:
        # step 2: a NewCluster upgrade switches the RayService to a new RayCluster
        service.trigger_upgrade("head-service")
        new = service.must_switch(old)

        # step 3: both Services select the new RayCluster, the head Service exactly its head Pod
        service.services_must_select(new)

        # step 4: each Service moved once, from the old RayCluster to the new one
        service.services_must_have_switched_once(services, old, new, through="a NewCluster upgrade")
