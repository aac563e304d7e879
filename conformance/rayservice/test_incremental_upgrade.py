"""Incremental RayService upgrade (NewClusterWithIncrementalUpgrade) through a real Gateway, with each of KubeRay's
option sets: traffic moves to the new cluster through the HTTPRoute in steps of stepSizePercent, capacity in steps
of maxSurgePercent, one way only, at most every intervalSeconds, and no request fails; reverting the
spec mid-upgrade rolls the traffic back; a Serve config changed with the cluster goes to the new cluster only;
options that cannot work are refused."""
from __future__ import annotations

import copy
import datetime as dt

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.testing.context import Context
from rayconformance.testing.expect.conditions import condition, conditions_seen, has_condition
from rayconformance.testing.expect.incremental import traffic
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.traffic import answers_must_come_from, load_generator_must_get_more_answers
from rayconformance.testing.traffic import answered, summary
from rayconformance.testing.waiting import wait_until
from rayconformance.testing.watch import Watch

from .helpers import deploy, greeter, with_reply

STEP, INTERVAL, SURGE = 25, 10, 50  # the rollback test's options

# KubeRay's e2e sets (TestRayServiceIncrementalUpgrade): name -> (stepSizePercent, intervalSeconds, maxSurgePercent)
UPGRADE_SETS = {"BlueGreen": (100, 1, 100), "AggressiveGradual": (25, 5, 50), "ConservativeGradual": (5, 10, 25)}
GATEWAY_API = ("gateway.networking.k8s.io", "v1")


def incremental_service(ctx: Context, class_name: str, step: int = STEP, interval: int = INTERVAL,
                        surge: int = SURGE) -> list[dict]:
    """The greeter upgraded incrementally through the Gateway class `class_name` (stepSizePercent `step`,
    intervalSeconds `interval`, maxSurgePercent `surge`), with the Ray autoscaler on."""
    docs = greeter(ctx)
    rs = next(d for d in docs if d["kind"] == "RayService")
    rs["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": {
        "maxSurgePercent": surge, "stepSizePercent": step, "intervalSeconds": interval, "gatewayClassName": class_name}}
    rs["spec"]["rayClusterDeletionDelaySeconds"] = 5
    cfg = rs["spec"]["rayClusterConfig"]
    cfg["enableInTreeAutoscaling"] = True
    # the Ray autoscaler needs a worker group; this one stays empty (the Serve replica fits on the head)
    head_pod = copy.deepcopy(cfg["headGroupSpec"]["template"])
    head_pod["spec"]["containers"][0]["name"] = "ray-worker"
    head_pod["spec"]["containers"][0]["ports"] = [{"containerPort": 8000, "name": "serve"}]
    cfg["workerGroupSpecs"] = [{"groupName": "spare", "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
                                "rayStartParams": {"num-cpus": "1"}, "template": head_pod}]
    rs["spec"]["rayClusterConfig"]["autoscalerOptions"] = {
        "version": "v2", "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                       "limits": {"cpu": "500m", "memory": "512Mi"}}}
    return docs


def split(obj: dict) -> tuple:
    """(active traffic, active capacity, pending traffic, pending capacity, pending lastTrafficMigratedTime)."""
    active, pending = traffic(obj, "activeServiceStatus"), traffic(obj, "pendingServiceStatus")
    return active[0], active[1], pending[0], pending[1], pending[2]


def one_way(values: list, up: bool) -> bool:
    """The values (None: not reported yet, skipped) only grow (`up`) or only shrink."""
    seen = [v for v in values if v is not None]
    return all((b >= a) if up else (b <= a) for a, b in zip(seen, seen[1:]))


def backends(route: dict) -> list[tuple[str, int | None]]:
    """(Service, weight) of each backend of the HTTPRoute's first rule."""
    rules = (route.get("spec") or {}).get("rules") or [{}]
    return [(b.get("name"), b.get("weight")) for b in rules[0].get("backendRefs") or []]


@pytest.mark.feature("RayServiceIncrementalUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
@pytest.mark.parametrize("options", list(UPGRADE_SETS))
def test_traffic_shifts_in_steps_without_failures(ctx, gateway, options):
    """An incremental upgrade through a Gateway (KubeRay's three option sets: blue/green in one step of 100%, 25%
    steps every 5 s with a 50% surge, 5% steps every 10 s with a 25% surge) creates the new RayCluster's own serve
    Service and routes to both clusters through the RayService's HTTPRoute (two backends: the old cluster's serve
    Service, then the new one's, weights adding up to 100). Target capacity and traffic move one way only (the old
    cluster's down, the new one's up), traffic in steps of stepSizePercent (every step seen) and capacity in steps
    of maxSurgePercent, at most every intervalSeconds; both clusters answer along the way, and no request fails."""
    step, interval, surge = UPGRADE_SETS[options]
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name, step, interval, surge))
    old, _ = active_and_pending_clusters(obj)
    service.gateway_must_be_programmed()
    gen = service.start_traffic(url=gateway_class.url)

    routes = Watch(client.CustomObjectsApi(ctx.k8s).list_namespaced_custom_object, *GATEWAY_API, ctx.namespace,
                   "httproutes", what=f"the HTTPRoutes in {ctx.namespace}")
    with service.watch() as watch, routes:
        # step 1: the upgrade starts; the new RayCluster gets its own serve Service
        service.trigger_upgrade("incremental")
        pending = service.must_have_pending_cluster()
        old_svc, new_svc = f"{old}-serve-svc", f"{pending}-serve-svc"
        wait_until(lambda: ctx.core.read_namespaced_service(new_svc, ctx.namespace), lambda svc: svc is not None,
                   f"the serve Service {new_svc} of the new RayCluster {pending}", ctx.timeouts.short)

        # step 2: the upgrade completes
        obj, _ = service.incremental_upgrade_must_complete(old, gen)
        new, _ = active_and_pending_clusters(obj)
        answers_must_come_from(gen, new, ctx.timeouts.medium)
    watch.must_not_have_failed()
    routes.must_not_have_failed()
    stats = service.stop_traffic(gen)
    assert new == pending, f"expected the upgrade to end on the new RayCluster {pending}, observed {new}"

    # step 3: the HTTPRoute routed to both serve Services, old then new, the new one's weight only growing
    routed = [backends(v.obj) for v in routes.snapshot() if v.name == f"{service.name}-httproute"]
    both = [b for b in routed if [n for n, _ in b] == [old_svc, new_svc]]
    ctx.measure("incremental.route_weights", [[w for _, w in b] for b in both])
    assert both, (f"expected the HTTPRoute {service.name}-httproute to route to {old_svc} and {new_svc} during the "
                  f"upgrade, observed backends {routed}")
    assert all(sum(w or 0 for _, w in b) == 100 for b in both) and one_way([b[1][1] for b in both], up=True), \
        f"the HTTPRoute's weights must add up to 100 and move to {new_svc} only: {[[w for _, w in b] for b in both]}"

    # step 4: capacity and traffic moved one way, in steps, at most every intervalSeconds
    seen = [split(v.obj) for v in watch.snapshot() if active_and_pending_clusters(v.obj) == (old, pending)]
    steps = [t for i, t in enumerate(seen) if i == 0 or t != seen[i - 1]]
    ctx.measure("incremental.steps", [list(t) for t in steps])
    columns = dict(zip(("active traffic", "active capacity", "pending traffic", "pending capacity"), zip(*steps)))
    wrong = [name for name, values in columns.items() if not one_way(list(values), up=name.startswith("pending"))]
    assert not wrong, (f"the old cluster's traffic and capacity must only shrink and the new one's only grow; "
                       f"{', '.join(wrong)} did not: (active traffic, active capacity, pending traffic, pending "
                       f"capacity, pending lastTrafficMigratedTime) {steps}")
    moved = [p for p in columns.get("pending traffic", ()) if p is not None]
    expected = list(range(step, 100, step))
    assert sorted({p for p in moved if 0 < p < 100}) == expected and all(p % step == 0 for p in moved), \
        f"traffic must move to the new cluster in steps of {step}% (each of {expected} seen), observed {moved}"
    capacity = [c for c in columns.get("pending capacity", ()) if c is not None]
    assert all(c % surge == 0 or c == 100 for c in capacity), \
        f"the new cluster's target capacity must grow in steps of maxSurgePercent {surge}%, observed {capacity}"
    times = sorted({dt.datetime.fromisoformat(t[4].replace("Z", "+00:00")) for t in steps if t[4]})
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    # lastTrafficMigratedTime has whole seconds: a gap of intervalSeconds may read one second less
    assert all(g >= interval - 1 for g in gaps), f"traffic moved faster than every {interval}s: gaps {gaps}"

    # step 5: both clusters answered, and no request failed
    answers = " ".join(stats["answers"])
    assert old in answers and new in answers, f"expected answers from both {old} and {new}: {stats['answers']}"
    assert stats["failures"] == 0, f"an incremental upgrade must not fail requests: {summary(stats)}"


@pytest.mark.feature("RayServiceIncrementalUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_serve_config_changed_with_the_cluster_moves_with_the_traffic(ctx, gateway):
    """An incremental upgrade that changes the Serve config (the greeter's reply v1 -> v2) in the same update as
    the cluster spec (KubeRay's e2e TestRayServiceIncrementalUpgrade does both) reports UpgradeInProgress=True while
    both clusters serve and False once done; through the Gateway the old RayCluster answers only with the old reply
    and the new one only with the new reply, every step of the way (the new config is deployed to the new cluster,
    never to the old one), both answer, the upgrade ends on the new cluster answering v2, and no request fails."""
    step, interval, surge = UPGRADE_SETS["AggressiveGradual"]
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name, step, interval, surge))
    old, _ = active_and_pending_clusters(obj)
    service.gateway_must_be_programmed()
    gen = service.start_traffic(url=gateway_class.url)

    with service.watch() as watch:
        # step 1: the reply and the cluster spec change in one update; the new RayCluster is pending
        service.trigger_upgrade("incremental-serve-and-cluster", serve_config=with_reply(obj, "v2"))
        pending = service.must_have_pending_cluster()

        # step 2: the upgrade completes on the new RayCluster, which answers with the new reply
        done, _ = service.incremental_upgrade_must_complete(old, gen)
        new, _ = active_and_pending_clusters(done)
        service.traffic_must_get(gen, f"v2 from {new}")
        upgrading = [v for v in watch.snapshot() if has_condition(v.obj, "UpgradeInProgress", "True")]
        after = watch.first(lambda v: bool(upgrading) and v.at > upgrading[-1].at and has_condition(
            v.obj, "UpgradeInProgress", "False"), ctx.timeouts.state)
    stats = service.stop_traffic(gen)
    assert new == pending, f"expected the upgrade to end on the new RayCluster {pending}, observed {new}"

    # step 3: UpgradeInProgress said so while both clusters served, and stopped saying so after
    assert upgrading and after is not None, \
        (f"an incremental upgrade must report UpgradeInProgress=True while it runs and False once done; observed "
         f"UpgradeInProgress {conditions_seen(watch.snapshot(), 'UpgradeInProgress')}")

    # step 4: each cluster answered with its own Serve config only, and both answered
    expected = {f"v1 from {old}", f"v2 from {new}"}
    assert set(stats["answers"]) == expected, \
        (f"through the Gateway, only {sorted(expected)} may answer (the old RayCluster with the old Serve config, the "
         f"new one with the new), both of them; observed answers {stats['answers']}, of them not expected: "
         f"{sorted(set(stats['answers']) - expected)}")
    assert stats["failures"] == 0, f"an incremental upgrade must not fail requests: {summary(stats)}"


def answer_counts(stats: dict | None, cluster: str) -> int:
    """How many answers so far named RayCluster `cluster`."""
    return sum(n for a, n in ((stats or {}).get("answers") or {}).items() if cluster in a)


@pytest.mark.feature("RayServiceIncrementalRollback")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_reverting_the_spec_mid_upgrade_rolls_traffic_back(ctx, gateway):
    """Reverting a RayService's cluster spec while an incremental upgrade has moved part of the traffic to the new
    RayCluster rolls the upgrade back: the RayService reports RollbackInProgress=True, traffic returns to the
    original RayCluster, which stays the active one, the new RayCluster is deleted, the upgrade ends
    (UpgradeInProgress=False, no pending cluster), the RayService's HTTPRoute routes to the original cluster's serve
    Service alone, later answers all come from the original cluster, and no request fails, up to 30 s after the new
    cluster's last Pod is gone."""
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name))
    original, _ = active_and_pending_clusters(obj)
    original_spec = copy.deepcopy(obj["spec"]["rayClusterConfig"])
    service.gateway_must_be_programmed()
    gen = service.start_traffic(url=gateway_class.url)

    # step 1: an upgrade starts and moves part of the traffic to a new RayCluster
    service.trigger_upgrade("rollback")
    obj = service.traffic_must_partly_move(gen)
    pending = active_and_pending_clusters(obj)[1]
    answers_must_come_from(gen, pending, ctx.timeouts.medium)
    ctx.measure("rollback.reverted_at_pending_percent", traffic(obj, "pendingServiceStatus")[0])

    with service.watch() as watch:
        # step 2: the cluster spec is reverted to the original one
        service.patch({"spec": {"rayClusterConfig": original_spec}})
        reverted_at = gen.elapsed()
        ctx.measure("rollback.reverted_at_s", reverted_at)

        # step 3: the RayService reports the rollback
        rolling = service.must_report_rollback(watch)
        ctx.measure("rollback.reason", (condition(rolling.obj, "RollbackInProgress") or {}).get("reason"))

        # step 4: the rollback ends on the original RayCluster, with all the traffic and no pending cluster
        service.rollback_must_end_on(original, gen)
        ctx.measure("rollback.completed_at_s", gen.elapsed())
        service.must_have_stayed_on(watch, original, through="the rollback")

    # step 5: the new RayCluster is deleted, and the HTTPRoute routes to the original cluster's serve Service alone
    ctx.raycluster(pending).must_be_gone(after="the rollback")
    route, original_svc = f"{service.name}-httproute", f"{original}-serve-svc"
    wait_until(lambda: client.CustomObjectsApi(ctx.k8s).get_namespaced_custom_object(
        *GATEWAY_API, ctx.namespace, "httproutes", route),
        lambda r: [name for name, _ in backends(r)] == [original_svc],
        f"after the rollback the HTTPRoute {route} to route to {original_svc} alone", ctx.timeouts.short,
        render=lambda r: f"backends (Service, weight) {backends(r)}")

    # step 6: from now on every answer comes from the original RayCluster
    before = gen.stats()
    later = load_generator_must_get_more_answers(gen, before, 40, ctx.timeouts.medium, after="the rollback")
    from_new = answer_counts(later, pending) - answer_counts(before, pending)
    from_original = answer_counts(later, original) - answer_counts(before, original)
    assert from_new == 0 and from_original > 0, \
        (f"after the rollback every answer must come from RayCluster {original}; of the next "
         f"{answered(later) - answered(before)} answers {from_original} came from it and {from_new} from {pending}")

    # step 7: no request failed, up to 30 s after the new RayCluster's Pods were gone
    service.traffic_must_outlast(gen, pending)
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, \
        f"rolling an incremental upgrade back (spec reverted at {reverted_at}s) must not fail requests: {summary(stats)}"


# Options the operator must refuse for NewClusterWithIncrementalUpgrade: each (option values, what the refusal names)
INVALID_OPTIONS = {
    "surge-above-100": ({"maxSurgePercent": 150}, "maxSurgePercent"),
    "zero-interval": ({"intervalSeconds": 0}, "intervalSeconds"),
    "no-gateway-class": ({"gatewayClassName": ""}, "gatewayClassName"),
    "step-above-surge": ({"stepSizePercent": 50, "maxSurgePercent": 25}, "stepSizePercent"),
}
# cases a release may not refuse yet: case -> the feature that says it does (KubeRay v1.7.0 added the last one)
LATER_CHECKS = {"step-above-surge": "RayServiceIncrementalUpgradeStepWithinSurge"}


@pytest.mark.feature("RayServiceIncrementalUpgradeValidation")
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.feature(LATER_CHECKS[c])) if c in LATER_CHECKS
                                  else c for c in INVALID_OPTIONS])
@pytest.mark.samples("rayservice-greeter")
def test_invalid_upgrade_options_are_rejected(ctx, case):
    """A RayService asking for an incremental upgrade with an option that cannot work (a surge above 100%, an
    interval of 0 seconds, no Gateway class, traffic steps larger than the capacity surge) is rejected: the API server refuses it, or the operator reports
    Ready=False/ValidationFailed with a message naming the option; either way no RayCluster, Service or Pod is
    created for it."""
    options, named = INVALID_OPTIONS[case]
    docs = incremental_service(ctx, "rayconformance-unused")
    rs_body = next(d for d in docs if d["kind"] == "RayService")
    rs_body["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(options)
    ctx.create([d for d in docs if d["kind"] != "RayService"])
    service = ctx.rayservice(rs_body["metadata"]["name"])

    # step 1: the API server refuses it, or the operator reports it invalid, naming the option
    try:
        ctx.create_rayservice(rs_body)
    except ApiException as e:
        assert e.status == 422 and named in (e.body or ""), \
            f"expected the API server to refuse the RayService naming {named}, observed HTTP {e.status}: {e.body}"
    else:
        obj = service.must_report_condition("Ready", "False", "ValidationFailed")
        message = (condition(obj, "Ready") or {}).get("message") or ""
        assert named in message, f"expected the Ready message to name {named}, observed {message!r}"

    # step 2: nothing was created for it
    service.must_have_created_nothing(what=f"a RayService with invalid upgrade options ({options})")
