"""Changing course during an incremental upgrade (NewClusterWithIncrementalUpgrade) through a real Gateway, at each
stage KubeRay v1.7.0's rollback matrix tries: the spec reverted before any traffic moved, early, in the middle,
late, late with the new cluster's head lost; reverted and then set to the new spec again (the rollback canceled);
reverted and then set to a third spec. Wherever it starts, the RayService settles on one RayCluster running the spec asked for
last, with all the traffic, and no request fails on the way."""
from __future__ import annotations

import copy

import pytest
from kubernetes import client

from rayconformance.testing.expect.conditions import conditions_seen, has_condition
from rayconformance.testing.expect.incremental import traffic
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.traffic import load_generator_must_get_more_answers
from rayconformance.testing.traffic import summary
from rayconformance.testing.waiting import wait_until

from .helpers import deploy, with_reply
from .test_incremental_upgrade import GATEWAY_API, backends, incremental_service

# KubeRay's option sets for the matrix: (stepSizePercent, intervalSeconds, maxSurgePercent)
STANDARD_FAST, STANDARD_SLOW, CONSERVATIVE, BLUE_GREEN = (25, 2, 50), (25, 10, 50), (5, 2, 25), (100, 1, 100)
# where the pending cluster's trafficRoutedPercent must be when the spec is reverted
STAGES = {"before-traffic": (0, 0), "early": (1, 30), "middle": (30, 70), "late": (70, 99)}
# case -> (the specs in order after A, the stage of the revert, the options, the new head lost before the revert)
CASES = {
    "BasicRollback": ("ABA", "middle", STANDARD_FAST, False),
    "EarlyRollback": ("ABA", "early", STANDARD_FAST, False),
    "LateRollback": ("ABA", "late", STANDARD_SLOW, False),
    "FastRollback": ("ABA", "before-traffic", BLUE_GREEN, False),
    "UnhealthyPendingCluster": ("ABA", "late", STANDARD_SLOW, True),
    "CancelRollback": ("ABAB", "middle", CONSERVATIVE, False),
    "ThirdSpec": ("ABAC", "middle", CONSERVATIVE, False),
}
REPLY = {"A": "v1", "B": "v2", "C": "v3"}
MARKER = "RAYCONFORMANCE_UPGRADE"  # the head env var trigger_upgrade sets to name the spec


def spec_of(ctx, cluster: str) -> str:
    """Which spec (A, B or C) the RayCluster runs: the marker trigger_upgrade put in its head's env, A without."""
    head = ctx.raycluster(cluster).get()["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    return next((e["value"] for e in head.get("env") or [] if e["name"] == MARKER), "A")


@pytest.mark.feature("RayServiceIncrementalRollbackMatrix")
@pytest.mark.samples("rayservice-greeter", "loadgen")
@pytest.mark.parametrize("case", list(CASES))
def test_changing_course_mid_upgrade_settles_on_the_last_spec(ctx, gateway, case):
    """During an incremental upgrade from spec A to spec B (a new cluster spec and a new reply), reported as
    UpgradeInProgress=True, the spec is changed again at a given stage of the traffic shift: back to A (before any
    traffic moved, early, in the middle, late, or late with the new cluster's head Pod lost), back to A then to B
    again, or back to A then to a third spec C. Once the pending cluster had traffic, going back reports
    RollbackInProgress=True. The RayService then settles on one RayCluster with all the traffic and no upgrade or
    rollback in progress: the original one for A (the new one deleted), the same new one for B (the rollback
    canceled, no third cluster), a fresh one for C (the abandoned one deleted). Its HTTPRoute routes to that
    cluster's serve Service alone, every later request is answered with that spec's reply from that cluster, and no
    request fails on the way, up to 30 s after the last Pod of a RayCluster it left is gone, except, when the new head is lost, those it was answering until the traffic is back on
    the original cluster (measured: a head lost with 75% of the traffic fails requests whatever the operator does)."""
    sequence, stage, (step, interval, surge), crash = CASES[case]
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name, step, interval, surge))
    original, _ = active_and_pending_clusters(obj)
    spec_a = {"rayClusterConfig": copy.deepcopy(obj["spec"]["rayClusterConfig"]),
              "serveConfigV2": obj["spec"]["serveConfigV2"]}
    service.gateway_must_be_programmed()
    gen = service.start_traffic(url=gateway_class.url)

    with service.watch() as watch:
        # step 1: spec B starts an upgrade (UpgradeInProgress=True); the pending cluster's traffic reaches the stage
        # of the revert
        service.trigger_upgrade("B", serve_config=with_reply(obj, REPLY["B"]))
        upgrading = watch.first(lambda v: has_condition(v.obj, "UpgradeInProgress"), ctx.timeouts.short)
        assert upgrading is not None, \
            (f"changing the cluster spec to B must start an incremental upgrade reported as UpgradeInProgress=True; "
             f"observed UpgradeInProgress {conditions_seen(watch.snapshot(), 'UpgradeInProgress')}")
        low, high = STAGES[stage]
        reached = service.pending_traffic_must_reach(low, high, gen)
        first_pending = active_and_pending_clusters(reached)[1]
        at_percent = traffic(reached, "pendingServiceStatus")[0] or 0
        ctx.measure("rollback.reverted_at_pending_percent", at_percent)
        if crash:
            ctx.raycluster(first_pending).delete_pod(ctx.raycluster(first_pending).head_pod())

        # step 2: back to spec A; once traffic had moved, the RayService reports a rollback
        before = traffic(service.get(), "activeServiceStatus")[0] or 0
        service.patch({"spec": spec_a})
        reverted_at = watch.now()
        if stage != "before-traffic":
            rolling = watch.first(lambda v: v.t >= reverted_at and has_condition(v.obj, "RollbackInProgress"),
                                  ctx.timeouts.short)
            assert rolling is not None, \
                (f"reverting the spec with {at_percent}% of the traffic on the new cluster must report RollbackInProgress=True; observed RollbackInProgress "
                 f"{conditions_seen(watch.snapshot(), 'RollbackInProgress')}")

        # step 3 (ABAB, ABAC): once traffic is coming back, the spec changes once more
        last = sequence[-1]
        if last != "A":
            wait_until(service.get, lambda o: (traffic(o, "activeServiceStatus")[0] or 0) > before,
                       f"the original cluster's traffic to grow back above {before}% in the rollback",
                       ctx.timeouts.upgrade)
            service.trigger_upgrade(last, serve_config=with_reply(obj, REPLY[last]))

        # step 4: the RayService settles on one cluster running the last spec
        settled = service.incremental_upgrade_must_settle(gen)
    watch.must_not_have_failed()
    final, _ = active_and_pending_clusters(settled)
    wanted = {"A": f"the original RayCluster {original}", "B": f"the same new RayCluster {first_pending}",
              "C": "a RayCluster neither the original nor the abandoned one"}[last]
    right = {"A": final == original, "B": final == first_pending, "C": final not in (original, first_pending)}[last]
    assert right and spec_of(ctx, final) == last, \
        (f"after {'->'.join(sequence)} (reverted {stage}) the RayService must settle on {wanted} running spec {last}; "
         f"observed RayCluster {final} running spec {spec_of(ctx, final)}")
    for gone in sorted({original, first_pending} - {final}):
        ctx.raycluster(gone).must_be_gone(after=f"the RayService settled on {final}")

    # step 5: the HTTPRoute routes to the final cluster alone, and every later answer is its spec's
    routes, route = client.CustomObjectsApi(ctx.k8s), f"{service.name}-httproute"
    led_to = wait_until(lambda: [n for n, _ in backends(routes.get_namespaced_custom_object(
        *GATEWAY_API, ctx.namespace, "httproutes", route))], lambda names: names == [f"{final}-serve-svc"],
        f"once settled, the HTTPRoute {route} to route to {final}-serve-svc alone", ctx.timeouts.short)
    ctx.measure("rollback.route_backends", led_to)
    before_stats = gen.stats()
    later = load_generator_must_get_more_answers(gen, before_stats, 40, ctx.timeouts.medium, after="it settled")
    new_answers = {a: n - (before_stats or {}).get("answers", {}).get(a, 0) for a, n in later["answers"].items()}
    wrong = {a: n for a, n in new_answers.items() if n and a != f"{REPLY[last]} from {final}"}
    failed_since = later["failures"] - (before_stats or {}).get("failures", 0)
    assert not wrong and not failed_since, \
        (f"once settled on {final} (spec {last}), every request must be answered {REPLY[last]!r} from it; observed "
         f"{wrong or 'no other answer'} and {failed_since} failed among the next requests: {summary(later)}")

    # step 6: no request failed until the left RayClusters' Pods were gone and 30 s more (with the new head lost,
    # those it was answering fail until the traffic is back)
    for gone in sorted({original, first_pending} - {final}):
        service.traffic_must_outlast(gen, gone)
    stats = service.stop_traffic(gen)
    if crash:
        ctx.measure("rollback.failed_while_the_new_head_was_lost", stats["failures"])
    else:
        assert stats["failures"] == 0, \
            (f"changing course mid-upgrade ({'->'.join(sequence)}, revert {stage}) must not fail requests: "
             f"{summary(stats)}")
