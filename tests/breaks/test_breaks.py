"""Deliberate breaks: each conformance test must FAIL, with a message naming what it expected and what it
observed, when the behavior it checks is broken. Each case runs the real suite (`pytest conformance
--run-test <test>`) on a local test bed with one thing broken: the operator's configuration (a derived
profile), a sample, or a saboteur that acts on the cluster while the test runs (e.g. the operator scaled
to zero). Slow (every case waits out a scaled timeout), so they run with `make test-breaks`.
"""
from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml
from kubernetes import client, config

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect import raycluster, rayjob, rayservice
from rayconformance.fixtures.namespaces import RUN_LABEL
from tests.breaks.conftest import BED_DEFINITION
from tests.suiterun import RUN_ID, derive_profile, run_suite

pytestmark = [pytest.mark.integration, pytest.mark.breaks]
BASE_PROFILE = "kuberay-v1.6.1"


@dataclass
class Case:
    test: str  # short test name for --run-test
    expect: str  # a regular expression the failure message must match
    gates: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    samples: dict[str, Callable[[list[dict]], None]] = field(default_factory=dict)  # sample -> mutation
    saboteur: Callable[[client.ApiClient, threading.Event], None] | None = None
    timeout_scale: float = 0.3
    local: bool = False  # the suite sees the bed as the `local` provider (for its capabilities), not `existing`


def _until(stop: threading.Event, probe: Callable[[], bool], period: float = 1.0) -> bool:
    while not stop.is_set():
        try:
            if probe():
                return True
        except Exception:  # noqa: BLE001 - the cluster changes under us; keep looking
            pass
        stop.wait(period)
    return False


def _scale_operator(api: client.ApiClient, replicas: int) -> bool:
    client.AppsV1Api(api).patch_namespaced_deployment_scale("kuberay-operator", "ray-system",
                                                            {"spec": {"replicas": replicas}})
    return True


def _any(plural: str, pred: Callable[[dict], bool]) -> Callable[[client.ApiClient], bool]:
    return lambda api: any(pred(o) for o in
                           client.CustomObjectsApi(api).list_cluster_custom_object("ray.io", "v1", plural)["items"])


def _namespace_created(api: client.ApiClient) -> bool:
    """This run's test namespace exists and is active (the operator was installed and Available before)."""
    items = client.CoreV1Api(api).list_namespace(label_selector=f"{RUN_LABEL}={RUN_ID}").items
    return any(ns.status.phase == "Active" for ns in items)


def _namespace_terminating(api: client.ApiClient) -> bool:
    """The test is over: its namespace is being deleted."""
    items = client.CoreV1Api(api).list_namespace(label_selector=f"{RUN_LABEL}={RUN_ID}").items
    return any(ns.status.phase == "Terminating" for ns in items)


def stop_operator_when(probe: Callable[[client.ApiClient], bool]):
    """A saboteur: scale the operator to zero once `probe` holds, and back to one once the test is over (its
    finalizers, e.g. a RayJob's, must run for the test's namespace to go)."""
    def saboteur(api: client.ApiClient, stop: threading.Event) -> bool:
        acted = _until(stop, lambda: probe(api), 0.5) and _until(stop, lambda: _scale_operator(api, 0), 1.0)
        if acted and _until(stop, lambda: _namespace_terminating(api), 1.0):
            _until(stop, lambda: _scale_operator(api, 1), 1.0)
        return acted
    return saboteur


provisioned = _any("rayclusters", raycluster.is_provisioned)
service_ready = _any("rayservices", rayservice.is_ready)
upgrade_pending = _any("rayservices", rayservice.is_upgrading)
job_suspended = _any("rayjobs", rayjob.is_suspended)
job_running = _any("rayjobs", rayjob.is_running)


def kill_active_head_during_upgrade(api: client.ApiClient, stop: threading.Event) -> bool:
    co, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    found: dict = {}

    def upgrading():
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayservices")["items"]:
            if rayservice.is_upgrading(o):
                found.update(ns=o["metadata"]["namespace"], active=rayservice.active_and_pending_clusters(o)[0])
                return True
        return False

    return _until(stop, upgrading, 0.5) and _until(stop, lambda: core.delete_collection_namespaced_pod(
        found["ns"], label_selector=f"ray.io/cluster={found['active']},ray.io/node-type=head",
        grace_period_seconds=0) is not None, 1.0)


def _set(path: list, value):
    def mutate(docs: list[dict]) -> None:
        node = next(d for d in docs if d["kind"] in ("RayCluster", "RayJob", "RayService"))
        for k in path[:-1]:
            node = node[k]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
    return mutate


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


RESUBMITTING_SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{
    "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
    "command": ["bash", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --no-wait -- "
                "python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range(45)]; "
                "print('entrypoint done')\" && sleep 40"],
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}}]}}

# A submitter that submits a 5-minute job and exits 0 at once: the RayJob ends Failed with jobStatus FAILED
# after the operator's submitter-finished grace period, with that reason instead of AppFailed.
EARLY_EXITING_SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{
    "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
    "command": ["bash", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id "
                "$RAY_JOB_SUBMISSION_ID --no-wait -- python -c 'import time; time.sleep(300)'"],
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}}]}}


def delete_selected_cluster_when_job_finished(api: client.ApiClient, stop: threading.Event) -> bool:
    """A saboteur acting as if the operator applied shutdownAfterJobFinishes to a RayCluster chosen by
    clusterSelector: once such a RayJob has finished, delete that RayCluster."""
    co = client.CustomObjectsApi(api)
    found: dict = {}

    def finished():
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayjobs")["items"]:
            selected = (o["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
            if selected and rayjob.is_finished(o):
                found.update(ns=o["metadata"]["namespace"], cluster=selected)
                return True
        return False

    return _until(stop, finished, 0.5) and _until(stop, lambda: co.delete_namespaced_custom_object(
        "ray.io", "v1", found["ns"], "rayclusters", found["cluster"]) is not None, 1.0)


def patch_rayjob_spec(field: str, value):
    """A saboteur acting as if the operator ignored a RayJob's spec.<field>: as soon as a RayJob sets it to
    something else, patch it to `value` (None removes it), so the operator acts on the RayJob without it."""
    def saboteur(api: client.ApiClient, stop: threading.Event) -> bool:
        co = client.CustomObjectsApi(api)

        def patched() -> bool:
            for o in co.list_cluster_custom_object("ray.io", "v1", "rayjobs")["items"]:
                if o["spec"].get(field) not in (None, value):
                    co.patch_namespaced_custom_object("ray.io", "v1", o["metadata"]["namespace"], "rayjobs",
                                                      o["metadata"]["name"], {"spec": {field: value}})
                    return True
            return False
        return _until(stop, patched, 0.5)
    return saboteur


CASES = [
    Case("head_and_workers_provisioned", "RayClusterProvisioned=True", gates={"RayClusterStatusConditions": False}),
    Case("suspend_and_resume", "RayClusterProvisioned=True", gates={"RayClusterStatusConditions": False}),
    Case("manual_scale_up_and_down", "scale up to 2", saboteur=stop_operator_when(provisioned)),
    Case("delete_cleans_redis_and_removes_cluster", "DBSIZE", env={"ENABLE_GCS_FT_REDIS_CLEANUP": "false"}),
    Case("detached_actor_survives_head_pod_deletion", "keep its state",
         samples={"raycluster-gcs-ft": _set(["spec", "gcsFaultToleranceOptions"], None)}),
    Case("invalid_configuration_gets_warning_event", "Warning event", saboteur=stop_operator_when(_namespace_created)),
    Case("demand_scales_workers_up_and_idle_down[v1]", "autoscaler",
         samples={"raycluster-autoscaler": _set(["spec", "enableInTreeAutoscaling"], False)}),
    Case("demand_scales_workers_up_and_idle_down[v2]", "autoscaler",
         samples={"raycluster-autoscaler": _set(["spec", "enableInTreeAutoscaling"], False)}),
    # as if the operator did not derive `--num-gpus` from the container's nvidia.com/gpu limit
    Case("gpu_worker_group_gets_a_gpu", "must count the worker's GPU",
         samples={"raycluster-gpu": _set(["spec", "workerGroupSpecs", 0, "rayStartParams", "num-gpus"], "0")},
         timeout_scale=0.6),  # the probe job itself waits up to 3 minutes for a GPU
    Case("job_runs_to_completion_and_cluster_is_removed", "shutdownAfterJobFinishes",
         samples={"rayjob-basic": _set(["spec", "shutdownAfterJobFinishes"], False)}),
    Case("failing_entrypoint_ends_failed", "reason=AppFailed",
         samples={"rayjob-basic": _set(["spec", "submitterPodTemplate"], EARLY_EXITING_SUBMITTER)}),
    Case("created_suspended_then_resumed", r"RayJob \S+ to finish", saboteur=stop_operator_when(job_suspended)),
    Case("suspending_running_job_tears_down_cluster", "Suspended", saboteur=stop_operator_when(job_running)),
    Case("new_submitter_attaches_to_running_job[pod-deletion]", "submitter",
         samples={"rayjob-basic": _set(["spec", "submitterPodTemplate"], RESUBMITTING_SUBMITTER)}),
    Case("new_submitter_attaches_to_running_job[network-cut]", "submitter",
         samples={"rayjob-basic": _set(["spec", "submitterPodTemplate"], RESUBMITTING_SUBMITTER)}, local=True),
    Case("active_deadline_ends_job_without_retry", "reason=DeadlineExceeded",
         saboteur=patch_rayjob_spec("activeDeadlineSeconds", None), timeout_scale=0.2),
    Case("backoff_limit_retries_on_new_clusters", "3 failed attempts", saboteur=patch_rayjob_spec("backoffLimit", None)),
    Case("invalid_rayjob_fails_validation_and_creates_nothing", "ValidationFailed",
         samples={"rayjob-invalid": _set(["spec", "shutdownAfterJobFinishes"], True)}),
    Case("http_mode_runs_without_submitter_job", "no Kubernetes Job in HTTPMode",
         samples={"rayjob-http-mode": _set(["spec", "submissionMode"], "K8sJobMode")}),
    Case("interactive_mode_waits_for_job_id", "Waiting",
         samples={"rayjob-interactive": _set(["spec", "submissionMode"], "K8sJobMode")}, timeout_scale=0.2),
    Case("cluster_selector_runs_on_existing_cluster", "RayCluster basic to remain after a RayJob",
         saboteur=delete_selected_cluster_when_job_finished),
    Case("cluster_deleted_only_after_ttl", "ttlSecondsAfterFinished=30",
         saboteur=patch_rayjob_spec("ttlSecondsAfterFinished", 0)),
    Case("serve_app_answers_through_serve_service", "Ready=True", saboteur=stop_operator_when(_namespace_created)),
    Case("serve_config_change_applies_in_place", "answer", saboteur=stop_operator_when(service_ready)),
    Case("new_cluster_upgrade_drops_no_request", "must not fail requests", saboteur=kill_active_head_during_upgrade),
    Case("pending_head_failure_does_not_break_upgrade", "switch", saboteur=stop_operator_when(upgrade_pending)),
    Case("active_head_failure_with_gcs_ft_does_not_break_upgrade", "at most",
         samples={"rayservice-greeter-ft": serve_from_slow_head_without_ft}),
    Case("traffic_shifts_in_steps_without_failures", "Gateway|Ready=True", gates={"RayServiceIncrementalUpgrade": False}),
]


def _samples(tmp: Path, case: Case) -> Path:
    d = tmp / "samples"
    d.mkdir(exist_ok=True)
    for name, mutate in case.samples.items():
        docs = ray.load_sample(name)
        mutate(docs)
        (d / f"{name}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return d


@pytest.mark.parametrize("case", CASES, ids=[c.test for c in CASES])
def test_conformance_test_fails_when_behavior_is_broken(case: Case, tmp_path, bed_kubeconfig):
    profile = derive_profile(tmp_path, BASE_PROFILE, f"{BASE_PROFILE}-broken-{abs(hash(case.test)) % 10**6}",
                             gates=case.gates, env=case.env)
    stop = threading.Event()
    saboteur, acted = None, []
    if case.saboteur:
        api = config.new_client_from_config(str(bed_kubeconfig))
        saboteur = threading.Thread(target=lambda: acted.append(case.saboteur(api, stop)))
        saboteur.start()
    try:
        run = run_suite(bed_kubeconfig, profile, case.test, tmp_path / "reports", timeout_scale=case.timeout_scale,
                        samples=_samples(tmp_path, case), local_bed=BED_DEFINITION if case.local else None)
    finally:
        stop.set()
        if saboteur:
            saboteur.join(30)
    cases = run.testcases(case.test)
    assert cases, f"{case.test} did not run:\n{run.output}"
    assert not case.saboteur or acted == [True], f"the saboteur never acted ({acted}); the suite said:\n{run.output}"
    failures = [f for tc in cases for f in tc.findall("failure")]
    errors = [f for tc in cases for f in tc.findall("error")]
    assert failures and not errors, \
        f"expected {case.test} to FAIL (not pass, not error); junit: {ET.tostring(cases[0], encoding='unicode')[:3000]}"
    message = " ".join((f.get("message") or "") + (f.text or "") for f in failures)
    assert re.search(case.expect, message), f"the failure message should mention {case.expect!r}:\n{message[:3000]}"
