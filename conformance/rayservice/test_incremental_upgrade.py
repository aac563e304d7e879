"""Incremental RayService upgrade (NewClusterWithIncrementalUpgrade) through a real Gateway: traffic moves to
the new cluster in steps of stepSizePercent, at most every intervalSeconds, and no request fails."""
from __future__ import annotations

import copy
import datetime as dt

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.gateway import gateway_must_be_programmed
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, describe_rayservice,
                                                       has_switched_from)
from rayconformance.fixtures.expect.traffic import answers_must_come_from
from rayconformance.fixtures.traffic import summary
from rayconformance.fixtures.waiting import wait_until

from .helpers import deploy, final_stats, start_traffic, trigger_upgrade

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
