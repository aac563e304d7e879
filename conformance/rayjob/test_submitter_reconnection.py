"""RayJob submitter reconnection: when the submitter Pod fails mid-job (network cut or Pod loss), the Job's
next submitter attaches to the existing submission instead of submitting again, and the RayJob succeeds."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import describe_rayjob, rayjob_must_succeed
from rayconformance.fixtures.waiting import wait_until

from .helpers import submitter_pods

# Prints a tick per second for 45 s; a second run of it would show up as a second job in Ray's job list.
ENTRYPOINT = ("python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range(45)]; "
              "print('entrypoint done')\"")


def ray_jobs_with_entrypoint(k8s, namespace: str, svc: str) -> list[dict]:
    code, body = ray.proxy_get(k8s, namespace, svc, "dashboard", "api/jobs/")
    jobs = ray.json_or_none(body) if code == 200 else None
    return [j for j in jobs or [] if "entrypoint done" in (j.get("entrypoint") or "")]


def describe_submitters(k8s, namespace: str, rayjob: str) -> str:
    rj = ray.RayResources(k8s, namespace, "RayJob").get(rayjob)
    return (f"{describe_rayjob(rj)}; submitter Pods: "
            f"{[(p.metadata.name, p.status.phase) for p in submitter_pods(k8s, namespace, rayjob)]}")


def submitter_must_stream_output(k8s, namespace: str, rayjob: str, timeout: float):
    """A Running submitter Pod whose log follows the job's output (its 4th tick); returns the Pod."""
    core = client.CoreV1Api(k8s)

    def first_running_and_its_log():
        ps = [p for p in submitter_pods(k8s, namespace, rayjob) if p.status.phase == "Running"]
        return (ps[0], core.read_namespaced_pod_log(ps[0].metadata.name, namespace)) if ps else (None, "")

    return wait_until(first_running_and_its_log, lambda pod_log: "tick 3" in pod_log[1],
                      "the submitter to stream the running job's output", timeout,
                      render=lambda _: describe_submitters(k8s, namespace, rayjob))[0]


def new_submitter_must_start(k8s, namespace: str, rayjob: str, failed_pod, timeout: float) -> list:
    """The Kubernetes Job starts a submitter Pod other than `failed_pod`; returns the new ones."""
    return wait_until(lambda: [p for p in submitter_pods(k8s, namespace, rayjob)
                               if p.metadata.uid != failed_pod.metadata.uid], bool,
                      "the Kubernetes Job to start a new submitter Pod", timeout,
                      render=lambda _: describe_submitters(k8s, namespace, rayjob))


@pytest.mark.feature("RayJobSubmitterReconnection")
@pytest.mark.parametrize("fault", ["network-cut", "pod-deletion"])
def test_new_submitter_attaches_to_running_job(k8s, namespace, ray_version, timeouts, provider, fault):
    """When a RayJob's submitter Pod fails mid-job (its network cut, or the Pod deleted), the Job's next
    submitter attaches to the running submission instead of submitting again: the RayJob succeeds with the
    same job id, Ray ran the entrypoint once, and the new submitter's log follows the job to its end."""
    if fault == "network-cut" and not provider.supports("cut_pod_network"):
        pytest.skip(f"provider {provider.name} cannot cut a Pod's network; the pod-deletion form covers it")
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["entrypoint"] = ENTRYPOINT
    body["spec"]["shutdownAfterJobFinishes"] = False  # keep the cluster to read Ray's job list at the end
    name = body["metadata"]["name"]
    rj.create(body)
    core = client.CoreV1Api(k8s)

    pod = submitter_must_stream_output(k8s, namespace, name, timeouts.long)
    job_id = ray.status(rj.get(name))["jobId"]

    if fault == "network-cut":
        provider.cut_pod_network(pod)
    else:
        core.delete_namespaced_pod(pod.metadata.name, namespace)

    new_submitter_must_start(k8s, namespace, name, pod, timeouts.medium)
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long, when=f"after the submitter failed ({fault})")
    assert ray.status(obj).get("jobId") == job_id, \
        f"the job id changed from {job_id} to {ray.status(obj).get('jobId')}"

    svc = ((obj["status"].get("rayClusterStatus") or {}).get("head") or {}).get("serviceName")
    runs = ray_jobs_with_entrypoint(k8s, namespace, svc)
    assert [j.get("submission_id") for j in runs] == [job_id], \
        (f"the entrypoint must run once, as submission {job_id}; Ray's job list shows "
         f"{[(j.get('submission_id'), j.get('status')) for j in runs]}")
    new = [p for p in submitter_pods(k8s, namespace, name) if p.metadata.uid != pod.metadata.uid][-1]
    log = core.read_namespaced_pod_log(new.metadata.name, namespace)
    assert "entrypoint done" in log, f"the new submitter did not follow the job to its end:\n{log[-1500:]}"
