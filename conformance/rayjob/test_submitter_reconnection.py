"""RayJob submitter reconnection: when the submitter Pod fails mid-job (network cut or Pod loss), the Job's
next submitter attaches to the existing submission instead of submitting again, and the RayJob succeeds."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray

# Prints a tick per second for 45 s; a second run of it would show up as a second job in Ray's job list.
ENTRYPOINT = ("python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range(45)]; "
              "print('entrypoint done')\"")


@pytest.mark.feature("RayJobSubmitterReconnection")
@pytest.mark.parametrize("fault", ["network-cut", "pod-deletion"])
@pytest.mark.samples("rayjob-basic")
def test_new_submitter_attaches_to_running_job(ctx, fault):
    """When a RayJob's submitter Pod fails mid-job (its network cut, or the Pod deleted), the Job's next
    submitter attaches to the running submission instead of submitting again: the RayJob succeeds with the
    same job id, Ray ran the entrypoint once, and the new submitter's log follows the job to its end."""
    provider = ctx.provider
    if fault == "network-cut" and not provider.supports("cut_pod_network"):
        pytest.skip(f"provider {provider.name} cannot cut a Pod's network; the pod-deletion form covers it")
    body = ctx.sample("rayjob-basic")
    body["spec"]["entrypoint"] = ENTRYPOINT
    body["spec"]["shutdownAfterJobFinishes"] = False  # keep the cluster to read Ray's job list at the end
    job = ctx.create_rayjob(body)

    pod = job.submitter_must_stream_output("tick 3")  # the job's 4th tick: it is running
    job_id = job.status()["jobId"]

    if fault == "network-cut":
        provider.cut_pod_network(pod)
    else:
        ctx.core.delete_namespaced_pod(pod.metadata.name, ctx.namespace)

    job.new_submitter_must_start(pod)
    obj = job.must_succeed(when=f"after the submitter failed ({fault})")
    assert ray.status(obj).get("jobId") == job_id, \
        f"the job id changed from {job_id} to {ray.status(obj).get('jobId')}"

    runs = [j for j in job.ray_jobs() if "entrypoint done" in (j.get("entrypoint") or "")]
    assert [j.get("submission_id") for j in runs] == [job_id], \
        (f"the entrypoint must run once, as submission {job_id}; Ray's job list shows "
         f"{[(j.get('submission_id'), j.get('status')) for j in runs]}")
    new = [p for p in job.submitter_pods() if p.metadata.uid != pod.metadata.uid][-1]
    log = ctx.core.read_namespaced_pod_log(new.metadata.name, ctx.namespace)
    assert "entrypoint done" in log, f"the new submitter did not follow the job to its end:\n{log[-1500:]}"
