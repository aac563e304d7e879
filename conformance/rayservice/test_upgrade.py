"""Zero-downtime RayService upgrade (NewCluster) under continuous traffic, and head Pod (or its Serve proxy) failure
during it."""
from __future__ import annotations

import uuid

import pytest

from rayconformance.testing.expect.conditions import has_condition
from rayconformance.testing.expect.rayservice import active_and_pending_clusters, describe_rayservice
from rayconformance.testing.traffic import summary

from .helpers import deploy, greeter, signal_processes

# How long the upgraded application's replica takes to start (samples/rayservice-greeter.yaml reads it): long
# enough to lose the pending head between the operator's submission and the application running.
APP_START_DELAY_S = 20


@pytest.mark.feature("RayServiceZeroDowntimeUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_new_cluster_upgrade_drops_no_request(ctx):
    """Changing a RayService's cluster spec upgrades it to a new RayCluster (NewCluster): traffic switches to
    the new cluster, the old one is deleted, and no request sent through the serve Service meanwhile fails."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)
    gen = service.start_traffic()

    ctx.measure("upgrade.started_at_s", gen.elapsed())
    service.trigger_upgrade("1")
    service.must_start_upgrade(old)
    service.must_complete_upgrade(old, gen)
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, f"a zero-downtime upgrade must not fail requests: {summary(stats)}"


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_pending_head_failure_does_not_break_upgrade(ctx):
    """Losing the pending RayCluster's head Pod during a NewCluster upgrade, after the operator has already
    submitted the new Serve config to it, does not stop the upgrade: the restarted head has no Serve application,
    so the operator must notice and submit the config again; traffic then switches to that same pending RayCluster
    (not one prepared anew), and no request fails."""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)
    gen = service.start_traffic()

    # step 1: an upgrade whose new application takes a while to start (it stays DEPLOYING for that long)
    ctx.measure("upgrade.started_at_s", gen.elapsed())
    service.trigger_upgrade("head-failure", env={"GREETER_INIT_DELAY_S": str(APP_START_DELAY_S)})
    pending = service.must_have_pending_cluster()

    # step 2: once the operator has submitted the Serve config to the pending cluster, its head Pod is lost
    service.pending_cluster_must_get_applications(pending)
    pending_cluster = ctx.raycluster(pending)
    head = pending_cluster.head_pod_must_be_created(ctx.timeouts.short)
    ctx.measure("upgrade.pending_head_killed_at_s", gen.elapsed())
    pending_cluster.delete_pod(head)

    # step 3: the upgrade still completes on that cluster, its head back (the config submitted again), without a
    # failed request
    new = service.must_complete_upgrade(old, gen)
    stats = service.stop_traffic(gen)
    assert new == pending, \
        (f"the upgrade must complete on the pending RayCluster {pending}, its lost head Pod replaced in place; "
         f"observed traffic switched to RayCluster {new}")
    # The pending cluster serves no traffic before the switch, so its head failing must cost no request.
    assert stats["failures"] == 0, f"losing the pending head during an upgrade must not fail requests: {summary(stats)}"


# With GCS fault tolerance and the head out of the serve Service, a worker keeps serving while the active head is
# gone. Allowed: requests failing within one window of at most this many seconds (first to last failure), e.g.
# while the worker's Serve proxy reconnects to the restarted GCS or while the Service moves to the new cluster.
ACTIVE_HEAD_FAILURE_WINDOW_S = 30


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade", "RayClusterGCSFaultTolerance")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-ft", "loadgen")
def test_active_head_failure_with_gcs_ft_does_not_break_upgrade(ctx, redis):
    """With GCS fault tolerance, losing the active RayCluster's head Pod during a NewCluster upgrade fails
    requests for at most a short window, none before the head was lost, and the upgrade still completes.

    The window (ACTIVE_HEAD_FAILURE_WINDOW_S) is Ray's, not the operator's: when the head and its Serve controller
    come back, Ray Serve may drain the worker's proxy while it recovers its replicas, and the worker's readiness
    probe (Ray's proxy health) then takes it out of the serve Service for a few seconds; the operator reports that
    truly as Ready=False/ZeroServeEndpoints. Root-caused on the bed in test_head_loss.py (runs rootcause-headloss1
    and -2); KubeRay's own TestRayServiceGCSFaultTolerance avoids it by killing only gcs_server, not the head Pod."""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-ft"))
    old, _ = active_and_pending_clusters(obj)
    gen = service.start_traffic()

    ctx.measure("upgrade.started_at_s", gen.elapsed())
    service.trigger_upgrade("active-head-failure")
    service.must_have_pending_cluster()
    active = ctx.raycluster(old)
    heads = active.pods("head")
    assert heads, f"the active cluster {old} has no head Pod"
    killed_at = gen.elapsed()
    assert killed_at is not None, "could not read the load generator's clock before killing the head"
    ctx.measure("upgrade.active_head_killed_at_s", killed_at)
    active.delete_pod(heads[0])

    service.must_complete_upgrade(old, gen)
    stats = service.stop_traffic(gen)
    window = round(stats["last_failure_s"] - stats["first_failure_s"], 2) if stats["failures"] else 0.0
    ctx.measure("traffic.failure_window_s", window)
    assert stats["first_failure_s"] is None or stats["first_failure_s"] >= killed_at - 1, \
        f"requests failed before the active head was killed (at {killed_at}s): {summary(stats)}"
    assert window <= ACTIVE_HEAD_FAILURE_WINDOW_S, \
        (f"requests may fail within at most {ACTIVE_HEAD_FAILURE_WINDOW_S}s when the active head is lost during an "
         f"upgrade (killed at {killed_at}s); they failed from {stats['first_failure_s']}s to "
         f"{stats['last_failure_s']}s: {summary(stats)}")


# How long the new RayCluster's head waits before Ray starts (an init container): time to make the old head's Serve
# proxy fail, and to see the operator react, before the switch.
NEW_HEAD_DELAY_S = 30


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade", "RayServiceServeEndpoints")
@pytest.mark.samples("rayservice-greeter")
def test_old_head_proxy_failure_during_upgrade_moves_serving_to_the_new_head(ctx):
    """During a NewCluster upgrade, the Serve proxy of the active RayCluster's head (its only one) stops answering:
    the operator labels that head `ray.io/serve: "false"`, the serve Service routes to no Pod, and the RayService
    reports Ready=False with reason ZeroServeEndpoints while the upgrade is in progress (UpgradeInProgress=True);
    the upgrade still completes: traffic switches to the new RayCluster, whose head becomes the serve Service's only
    endpoint, and the RayService is Ready and answers again. (KubeRay's e2e TestOldHeadPodFailDuringUpgrade.)"""
    service, obj = deploy(ctx)
    old, _ = active_and_pending_clusters(obj)
    head = service.head_must_be_labeled_serving(old, "true", why="its Serve proxy answers").metadata.name
    service.serve_endpoints_must_be(old, [head], why="the head runs the only Serve proxy")

    # step 1: an upgrade whose new head starts Ray only after a while (the delay in the head's own image: one the run
    # has made ready, as it has the samples')
    spec = obj["spec"]["rayClusterConfig"]
    head_spec = spec["headGroupSpec"]["template"]["spec"]
    head_spec["initContainers"] = [{"name": "delay", "image": head_spec["containers"][0]["image"],
                                    "command": ["sleep", str(NEW_HEAD_DELAY_S)]}]
    service.patch({"spec": {"rayClusterConfig": spec, "rayClusterDeletionDelaySeconds": 5}})
    pending = service.must_have_pending_cluster()

    # step 2: the Serve proxy of the old head stops answering (its process stopped, and any Ray starts again)
    code, answer = ctx.raycluster(old).submit_ray_job(
        signal_processes("ray::ProxyActor", "SIGSTOP", for_s=int(ctx.timeouts.long)),
        f"rc-stop-proxy-{uuid.uuid4().hex[:6]}")
    assert code == 200, f"the Jobs API refused the job that stops the head's Serve proxy: HTTP {code} {answer[:300]}"

    # step 3: the operator labels the old head as not serving, and the serve Service routes to no Pod
    service.head_must_be_labeled_serving(old, "false", why="its Serve proxy stopped answering")
    service.serve_endpoints_must_be(old, [], why="the old head's Serve proxy stopped answering")

    # step 4: the RayService is not Ready, for want of serve endpoints, while the upgrade is in progress
    obj = service.must_report_condition("Ready", "False", "ZeroServeEndpoints")
    assert active_and_pending_clusters(obj) == (old, pending) and has_condition(obj, "UpgradeInProgress", "True"), \
        (f"expected Ready=False/ZeroServeEndpoints during the upgrade from {old} to {pending} "
         f"(UpgradeInProgress=True), observed {describe_rayservice(obj)}")

    # step 5: the upgrade completes: the new head is the serve Service's only endpoint, and it answers
    new = service.must_switch(old)
    new_head = service.head_must_be_labeled_serving(new, "true", why="its Serve proxy answers").metadata.name
    service.serve_endpoints_must_be(new, [new_head], why="the new head's proxy answers and the old head is gone")
    service.must_be_ready(ctx.timeouts.short)
    service.serve_service_must_answer(body=f"v1 from {new}")
