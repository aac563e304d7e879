"""Break cases for the RayService conformance tests, and the saboteurs and sample mutations they use."""
from __future__ import annotations

import threading

from kubernetes import client

from rayconformance.fixtures.expect import rayservice
from tests.breaks.harness import (Case, namespace_created, until, service_ready, stop_operator_when,
                                   upgrade_pending)


def kill_active_head_during_upgrade(api: client.ApiClient, stop: threading.Event) -> bool:
    co, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    found: dict = {}

    def upgrading():
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayservices")["items"]:
            if rayservice.is_upgrading(o):
                found.update(ns=o["metadata"]["namespace"], active=rayservice.active_and_pending_clusters(o)[0])
                return True
        return False

    return until(stop, upgrading, 0.5) and until(stop, lambda: core.delete_collection_namespaced_pod(
        found["ns"], label_selector=f"ray.io/cluster={found['active']},ray.io/node-type=head",
        grace_period_seconds=0) is not None, 1.0)


def serve_from_slow_head_without_ft(docs: list[dict]) -> None:
    """The FT RayService made fragile: no GCS fault tolerance, the Serve replica on the head, no workers, and a
    head that takes 20 s longer to start (so the pending cluster takes longer to take over)."""
    rs = next(d for d in docs if d["kind"] == "RayService")
    cfg = rs["spec"]["rayClusterConfig"]
    cfg.pop("gcsFaultToleranceOptions")
    cfg.pop("workerGroupSpecs")
    rs["spec"]["excludeHeadPodFromServeSvc"] = False
    head = cfg["headGroupSpec"]
    head["rayStartParams"]["num-cpus"] = "1"
    head["template"]["spec"]["initContainers"] = [{"name": "delay", "image": "busybox:1.36", "command": ["sleep", "20"]}]



CASES = [
    Case("serve_app_answers_through_serve_service", "Ready=True", saboteur=stop_operator_when(namespace_created)),
    Case("serve_config_change_applies_in_place", "answer", saboteur=stop_operator_when(service_ready)),
    Case("new_cluster_upgrade_drops_no_request", "must not fail requests", saboteur=kill_active_head_during_upgrade),
    Case("pending_head_failure_does_not_break_upgrade", "switch", saboteur=stop_operator_when(upgrade_pending)),
    Case("active_head_failure_with_gcs_ft_does_not_break_upgrade", "at most",
         samples={"rayservice-greeter-ft": serve_from_slow_head_without_ft}),
    Case("traffic_shifts_in_steps_without_failures", "Gateway|Ready=True", gates={"RayServiceIncrementalUpgrade": False}),
]
