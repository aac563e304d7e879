"""RayJob submitter reconnection: when the submitter Pod fails mid-job (network cut or Pod loss), the Job's
next submitter attaches to the existing submission instead of submitting again, and the RayJob succeeds."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import describe, status, submitter_pods

# Prints a tick per second for 45 s; a second run of it would show up as a second job in Ray's job list.
ENTRYPOINT = ("python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range(45)]; "
              "print('entrypoint done')\"")


def ray_jobs_with_entrypoint(k8s, namespace: str, svc: str) -> list[dict]:
    code, body = ray.proxy_get(k8s, namespace, svc, "dashboard", "api/jobs/")
    jobs = ray.json_or_none(body) if code == 200 else None
    return [j for j in jobs or [] if "entrypoint done" in (j.get("entrypoint") or "")]


@pytest.mark.feature("RayJobSubmitterReconnection")
@pytest.mark.parametrize("fault", ["network-cut", "pod-deletion"])
def test_new_submitter_attaches_to_running_job(k8s, namespace, ray_version, timeouts, provider, fault):
    if fault == "network-cut" and not provider.supports("cut_pod_network"):
        pytest.skip(f"provider {provider.name} cannot cut a Pod's network; the pod-deletion form covers it")
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["entrypoint"] = ENTRYPOINT
    body["spec"]["shutdownAfterJobFinishes"] = False  # keep the cluster to read Ray's job list at the end
    name = body["metadata"]["name"]
    rj.create(body)
    core = client.CoreV1Api(k8s)

    def first_submitter_ticking():
        ps = [p for p in submitter_pods(k8s, namespace, name) if p.status.phase == "Running"]
        if not ps:
            return False, None
        log = core.read_namespaced_pod_log(ps[0].metadata.name, namespace)
        return "tick 3" in log, ps[0]

    pod = wait_for(first_submitter_ticking, timeouts.long, "the submitter to stream the running job's output",
                   observe=lambda: f"{describe(rj.get(name))}; submitter Pods: "
                   f"{[(p.metadata.name, p.status.phase) for p in submitter_pods(k8s, namespace, name)]}")
    job_id = status(rj.get(name))["jobId"]

    if fault == "network-cut":
        provider.cut_pod_network(pod)
    else:
        core.delete_namespaced_pod(pod.metadata.name, namespace)

    def replacement():
        ps = [p for p in submitter_pods(k8s, namespace, name) if p.metadata.uid != pod.metadata.uid]
        return bool(ps), ps

    wait_for(replacement, timeouts.medium, "the Kubernetes Job to start a new submitter Pod",
             observe=lambda: [(p.metadata.name, p.status.phase) for p in submitter_pods(k8s, namespace, name)])
    obj = wait_for(lambda: (status(o := rj.get(name)).get("jobDeploymentStatus") in ("Complete", "Failed"), o),
                   timeouts.long, "the RayJob to finish", observe=lambda: describe(rj.get(name)))
    assert (status(obj).get("jobStatus"), status(obj).get("jobDeploymentStatus")) == ("SUCCEEDED", "Complete"), \
        f"after the submitter failed ({fault}) the RayJob must still succeed; observed {describe(obj)}"
    assert status(obj).get("jobId") == job_id, f"the job id changed from {job_id} to {status(obj).get('jobId')}"

    svc = ((obj["status"].get("rayClusterStatus") or {}).get("head") or {}).get("serviceName")
    runs = ray_jobs_with_entrypoint(k8s, namespace, svc)
    assert [j.get("submission_id") for j in runs] == [job_id], \
        (f"the entrypoint must run once, as submission {job_id}; Ray's job list shows "
         f"{[(j.get('submission_id'), j.get('status')) for j in runs]}")
    new = [p for p in submitter_pods(k8s, namespace, name) if p.metadata.uid != pod.metadata.uid][-1]
    log = core.read_namespaced_pod_log(new.metadata.name, namespace)
    assert "entrypoint done" in log, f"the new submitter did not follow the job to its end:\n{log[-1500:]}"
