"""Incremental RayService upgrade (NewClusterWithIncrementalUpgrade) through a real Gateway: traffic moves to
the new cluster in steps of stepSizePercent, at most every intervalSeconds, and no request fails; reverting the
spec mid-upgrade rolls the traffic back; options that cannot work are refused."""
from __future__ import annotations

import copy
import datetime as dt

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.fixtures.context import Context
from rayconformance.fixtures.expect.conditions import condition
from rayconformance.fixtures.expect.incremental import traffic
from rayconformance.fixtures.expect.rayservice import active_and_pending_clusters
from rayconformance.fixtures.expect.traffic import answers_must_come_from, load_generator_must_get_more_answers
from rayconformance.fixtures.traffic import answered, summary

from .helpers import deploy, greeter

STEP, INTERVAL, SURGE = 25, 10, 50


def incremental_service(ctx: Context, class_name: str) -> list[dict]:
    """The greeter upgraded incrementally through the Gateway class `class_name`, with the Ray autoscaler on."""
    docs = greeter(ctx)
    rs = next(d for d in docs if d["kind"] == "RayService")
    rs["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": {
        "maxSurgePercent": SURGE, "stepSizePercent": STEP, "intervalSeconds": INTERVAL, "gatewayClassName": class_name}}
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


@pytest.mark.feature("RayServiceIncrementalUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_traffic_shifts_in_steps_without_failures(ctx, gateway):
    """An incremental upgrade through a Gateway moves traffic to the new RayCluster only upward, in steps of
    stepSizePercent (several intermediate ones), at most every intervalSeconds; both clusters answer along
    the way, and no request fails."""
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name))
    old, _ = active_and_pending_clusters(obj)
    service.gateway_must_be_programmed()

    gen = service.start_traffic(url=gateway_class.url)

    service.trigger_upgrade("incremental")
    # seen: (pending traffic, pending capacity, pending lastTrafficMigratedTime) as they changed
    obj, seen = service.incremental_upgrade_must_complete(old, gen)
    new, _ = active_and_pending_clusters(obj)
    answers_must_come_from(gen, new, ctx.timeouts.medium)
    stats = service.stop_traffic(gen)
    ctx.measure("incremental.steps", [list(t) for t in seen])

    routed = [t[0] for t in seen if t[0] is not None]
    assert routed == sorted(routed), f"traffic to the new cluster must only grow: {routed}"
    assert all(p % STEP == 0 or p == 100 for p in routed), f"traffic must move in steps of {STEP}%: {routed}"
    intermediate = sorted({p for p in routed if 0 < p < 100})
    assert len(intermediate) >= 2, f"expected several intermediate traffic steps, observed {routed}"
    times = [dt.datetime.fromisoformat(t[2].replace("Z", "+00:00")) for t in seen if t[2]]
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:]) if b != a]
    assert all(g >= INTERVAL - 1 for g in gaps), f"traffic moved faster than every {INTERVAL}s: gaps {gaps}"
    answers = " ".join(stats["answers"])
    assert old in answers and new in answers, f"expected answers from both {old} and {new}: {stats['answers']}"
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
    (UpgradeInProgress=False, no pending cluster), later answers all come from the original cluster, and no
    request fails."""
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

    # step 5: the new RayCluster is deleted
    ctx.raycluster(pending).must_be_gone(after="the rollback")

    # step 6: from now on every answer comes from the original RayCluster
    before = gen.stats()
    later = load_generator_must_get_more_answers(gen, before, 40, ctx.timeouts.medium, after="the rollback")
    from_new = answer_counts(later, pending) - answer_counts(before, pending)
    from_original = answer_counts(later, original) - answer_counts(before, original)
    assert from_new == 0 and from_original > 0, \
        (f"after the rollback every answer must come from RayCluster {original}; of the next "
         f"{answered(later) - answered(before)} answers {from_original} came from it and {from_new} from {pending}")

    # step 7: no request failed
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, \
        f"rolling an incremental upgrade back (spec reverted at {reverted_at}s) must not fail requests: {summary(stats)}"


# Options the operator must refuse for NewClusterWithIncrementalUpgrade: each (option values, what the refusal names)
INVALID_OPTIONS = {
    "surge-above-100": ({"maxSurgePercent": 150}, "maxSurgePercent"),
    "zero-interval": ({"intervalSeconds": 0}, "intervalSeconds"),
    "no-gateway-class": ({"gatewayClassName": ""}, "gatewayClassName"),
}


@pytest.mark.feature("RayServiceIncrementalUpgradeValidation")
@pytest.mark.parametrize("case", list(INVALID_OPTIONS))
@pytest.mark.samples("rayservice-greeter")
def test_invalid_upgrade_options_are_rejected(ctx, case):
    """A RayService asking for an incremental upgrade with an option that cannot work (a surge above 100%, an
    interval of 0 seconds, no Gateway class) is rejected: the API server refuses it, or the operator reports
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
