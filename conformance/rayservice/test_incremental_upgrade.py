"""Incremental RayService upgrade (NewClusterWithIncrementalUpgrade) through a real Gateway: traffic moves to
the new cluster in steps of stepSizePercent, at most every intervalSeconds, and no request fails; reverting the
spec mid-upgrade rolls the traffic back; options that cannot work are refused."""
from __future__ import annotations

import copy
import datetime as dt

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition, has_condition
from rayconformance.fixtures.expect.gateway import gateway_must_be_programmed
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, describe_rayservice,
                                                       has_switched_from, rayservice_must_have_condition)
from rayconformance.fixtures.expect.traffic import answers_must_come_from
from rayconformance.fixtures.traffic import answered, summary
from rayconformance.fixtures.waiting import wait_until

from .helpers import ObjectWatch, deploy, distinct_states, elapsed, final_stats, start_traffic, trigger_upgrade

STEP, INTERVAL, SURGE = 25, 10, 50


def incremental_service(ray_version: str, class_name: str) -> list[dict]:
    docs = ray.load_sample("rayservice-greeter", ray_version)
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


def traffic(obj: dict, side: str) -> tuple[int | None, int | None, str | None]:
    s = ray.status(obj).get(side) or {}
    return s.get("trafficRoutedPercent"), s.get("targetCapacity"), s.get("lastTrafficMigratedTime")


@pytest.mark.feature("RayServiceIncrementalUpgrade")
def test_traffic_shifts_in_steps_without_failures(k8s, namespace, ray_version, timeouts, gateway, measure):
    """An incremental upgrade through a Gateway moves traffic to the new RayCluster only upward, in steps of
    stepSizePercent (several intermediate ones), at most every intervalSeconds; both clusters answer along
    the way, and no request fails."""
    gateway_class = gateway()
    docs = incremental_service(ray_version, gateway_class.class_name)
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name, (old, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    gateway_must_be_programmed(k8s, namespace, f"{name}-gateway", timeouts.medium)

    gen = start_traffic(k8s, namespace, obj, timeouts, url=gateway_class.url)

    trigger_upgrade(rs, obj, "incremental")
    seen: list[tuple] = []  # (pending traffic, pending capacity, pending lastTrafficMigratedTime)

    def record_step(o: dict | None) -> dict | None:
        if active_and_pending_clusters(o)[1]:
            t = traffic(o, "pendingServiceStatus")
            if not seen or seen[-1] != t:
                seen.append(t)
        return o

    obj = wait_until(lambda: record_step(rs.get(name)), lambda o: has_switched_from(o, old),
                     "the incremental upgrade to complete", timeouts.long, interval=0.5,
                     render=lambda o: f"{describe_rayservice(o)}; steps seen {seen}; traffic {summary(gen.stats())}")
    new, _ = active_and_pending_clusters(obj)
    answers_must_come_from(gen, new, timeouts.medium)
    stats = final_stats(gen, measure)
    measure("incremental.steps", [list(t) for t in seen])

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
def test_reverting_the_spec_mid_upgrade_rolls_traffic_back(k8s, namespace, ray_version, timeouts, gateway, measure):
    """Reverting a RayService's cluster spec while an incremental upgrade has moved part of the traffic to the new
    RayCluster rolls the upgrade back: the RayService reports RollbackInProgress=True, traffic returns to the
    original RayCluster, which stays the active one, the new RayCluster is deleted, the upgrade ends
    (UpgradeInProgress=False, no pending cluster), later answers all come from the original cluster, and no
    request fails."""
    gateway_class = gateway()
    docs = incremental_service(ray_version, gateway_class.class_name)
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name, (original, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    original_spec = copy.deepcopy(obj["spec"]["rayClusterConfig"])
    gateway_must_be_programmed(k8s, namespace, f"{name}-gateway", timeouts.medium)
    gen = start_traffic(k8s, namespace, obj, timeouts, url=gateway_class.url)

    # step 1: an upgrade starts and moves part of the traffic to a new RayCluster
    trigger_upgrade(rs, obj, "rollback")

    def part_moved(o: dict | None) -> bool:
        routed = traffic(o, "pendingServiceStatus")[0]
        return bool(active_and_pending_clusters(o)[1]) and routed is not None and 0 < routed < 100

    obj = wait_until(lambda: rs.get(name), part_moved, "part of the traffic to move to the new RayCluster",
                     timeouts.long, interval=0.5, render=lambda o: f"{describe_rayservice(o)}; pending traffic/"
                     f"capacity {traffic(o, 'pendingServiceStatus')[:2]}; traffic {summary(gen.stats())}")
    pending = active_and_pending_clusters(obj)[1]
    answers_must_come_from(gen, pending, timeouts.medium)
    measure("rollback.reverted_at_pending_percent", traffic(obj, "pendingServiceStatus")[0])

    with ObjectWatch(k8s, namespace, "rayservices", name) as watch:
        # step 2: the cluster spec is reverted to the original one
        rs.patch(name, {"spec": {"rayClusterConfig": original_spec}})
        reverted_at = elapsed(gen)
        measure("rollback.reverted_at_s", reverted_at)

        # step 3: the RayService reports the rollback
        rolling = watch.first(lambda v: has_condition(v.obj, "RollbackInProgress", "True"), timeouts.medium)
        watch.must_not_have_failed()
        assert rolling is not None, (f"after the cluster spec was reverted mid-upgrade, RayService {name} must report "
                                     f"RollbackInProgress=True; observed, in order:\n  "
                                     + "\n  ".join(distinct_states(watch.snapshot())))
        measure("rollback.reason", (condition(rolling.obj, "RollbackInProgress") or {}).get("reason"))

        # step 4: the rollback ends on the original RayCluster, with all the traffic and no pending cluster
        def rolled_back(o: dict | None) -> bool:
            return (active_and_pending_clusters(o) == (original, None) and not has_condition(o, "RollbackInProgress")
                    and has_condition(o, "UpgradeInProgress", "False")
                    and traffic(o, "activeServiceStatus")[0] == 100)

        obj = wait_until(lambda: rs.get(name), rolled_back,
                         f"the rollback to end on RayCluster {original} (active, trafficRoutedPercent 100, no pending "
                         f"cluster, UpgradeInProgress=False, no RollbackInProgress)", timeouts.long, interval=0.5,
                         render=lambda o: f"{describe_rayservice(o)}; active traffic/capacity "
                                          f"{traffic(o, 'activeServiceStatus')[:2]}; traffic {summary(gen.stats())}")
        measure("rollback.completed_at_s", elapsed(gen))
        moved = watch.first(lambda v: active_and_pending_clusters(v.obj)[0] not in (original, None), 0)
        assert moved is None, (f"RayCluster {original} must stay the active one through the rollback; observed "
                               f"active {active_and_pending_clusters(moved and moved.obj)[0]} at {moved and moved.t:.1f}s")

    # step 5: the new RayCluster is deleted
    raycluster_must_be_gone(k8s, namespace, pending, timeouts.medium, after="the rollback")

    # step 6: from now on every answer comes from the original RayCluster
    before = gen.stats()
    later = wait_until(gen.stats, lambda s: answered(s) - answered(before) >= 40,
                       "40 more answers after the rollback", timeouts.medium, render=summary)
    from_new = answer_counts(later, pending) - answer_counts(before, pending)
    from_original = answer_counts(later, original) - answer_counts(before, original)
    assert from_new == 0 and from_original > 0, \
        (f"after the rollback every answer must come from RayCluster {original}; of the next "
         f"{answered(later) - answered(before)} answers {from_original} came from it and {from_new} from {pending}")

    # step 7: no request failed
    stats = final_stats(gen, measure)
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
def test_invalid_upgrade_options_are_rejected(k8s, namespace, ray_version, timeouts, case):
    """A RayService asking for an incremental upgrade with an option that cannot work (a surge above 100%, an
    interval of 0 seconds, no Gateway class) is rejected: the API server refuses it, or the operator reports
    Ready=False/ValidationFailed with a message naming the option; either way no RayCluster, Service or Pod is
    created for it."""
    options, named = INVALID_OPTIONS[case]
    docs = incremental_service(ray_version, "rayconformance-unused")
    rs_body = next(d for d in docs if d["kind"] == "RayService")
    rs_body["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(options)
    ray.create_objects(k8s, namespace, [d for d in docs if d["kind"] != "RayService"])
    name = rs_body["metadata"]["name"]

    # step 1: the API server refuses it, or the operator reports it invalid, naming the option
    try:
        ray.RayResources(k8s, namespace, "RayService").create(rs_body)
    except ApiException as e:
        assert e.status == 422 and named in (e.body or ""), \
            f"expected the API server to refuse the RayService naming {named}, observed HTTP {e.status}: {e.body}"
    else:
        obj = rayservice_must_have_condition(k8s, namespace, name, "Ready", "False", "ValidationFailed",
                                             timeouts.short)
        message = (condition(obj, "Ready") or {}).get("message") or ""
        assert named in message, f"expected the Ready message to name {named}, observed {message!r}"

    # step 2: nothing was created for it
    clusters = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]
    services = [s.metadata.name for s in client.CoreV1Api(k8s).list_namespaced_service(namespace).items]
    pods = [p.metadata.name for p in client.CoreV1Api(k8s).list_namespaced_pod(namespace).items]
    assert not (clusters or services or pods), \
        (f"a RayService with invalid upgrade options ({options}) must create nothing; observed RayClusters {clusters}, "
         f"Services {services}, Pods {pods}")
