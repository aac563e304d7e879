"""RayJob in K8sJobMode: the cluster comes up, a submitter Job runs the entrypoint, status reaches its end."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import describe_rayjob


@pytest.mark.feature("RayJobK8sJobMode")
@pytest.mark.samples("rayjob-basic")
def test_job_runs_to_completion_and_cluster_is_removed(ctx):
    """A RayJob creates its RayCluster, runs its entrypoint through one submitter Job whose log shows the
    entrypoint's output, ends SUCCEEDED/Complete with a job id, and (shutdownAfterJobFinishes) deletes the
    RayCluster afterwards."""
    job = ctx.create_rayjob("rayjob-basic")

    cluster = job.must_create_its_cluster()
    obj = job.must_succeed()
    assert ray.status(obj).get("jobId"), f"status.jobId not set: {describe_rayjob(obj)}"

    jobs = job.submitter_jobs()
    assert len(jobs) == 1, f"expected one submitter Job owned by the RayJob, observed {[j.metadata.name for j in jobs]}"
    pods = job.submitter_pods()
    assert pods, "no submitter Pod found"
    logs = ctx.core.read_namespaced_pod_log(pods[-1].metadata.name, ctx.namespace)
    assert "rayconformance says 42" in logs, f"the entrypoint's output is missing from the submitter log:\n{logs[-1500:]}"

    cluster.must_be_gone(after="the job finished (shutdownAfterJobFinishes)")


@pytest.mark.feature("RayJobK8sJobMode")
@pytest.mark.samples("rayjob-basic")
def test_failing_entrypoint_ends_failed(ctx):
    """A RayJob whose entrypoint exits non-zero ends with jobStatus FAILED, jobDeploymentStatus Failed and
    reason AppFailed (the application failed, not the submission)."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "fails"
    body["spec"]["entrypoint"] = "python -c \"import sys; print('about to fail'); sys.exit(3)\""
    job = ctx.create_rayjob(body)
    job.must_finish(job_status="FAILED", deployment_status="Failed", reason="AppFailed",
                    when="for an entrypoint exiting 3")


@pytest.mark.feature("RayJobK8sJobMode")
@pytest.mark.samples("rayjob-basic")
def test_stopped_job_ends_complete_not_failed(ctx):
    """A Ray job its user stops (`ray job stop`) while it runs ends the RayJob with jobStatus STOPPED and
    jobDeploymentStatus Complete: not Failed, counted as no failure, and (shutdownAfterJobFinishes) its RayCluster
    is deleted as after any finished job."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "stopped"
    body["spec"]["entrypoint"] = ("python -c \"import time; print('rayconformance job to stop', flush=True); "
                                  "time.sleep(900)\"")
    job = ctx.create_rayjob(body)

    # step 1: the job runs
    cluster = job.must_create_its_cluster()
    job_id = ray.status(job.must_be_running()).get("jobId")
    assert job_id, f"a running RayJob names its Ray job in status.jobId; observed {describe_rayjob(job.get())}"

    # step 2: its user stops it through Ray's Jobs API
    job.ray_must_stop_job(job_id)

    # step 3: the RayJob ends Complete with the job's STOPPED, no failure counted, and its cluster goes
    obj = job.must_finish(job_status="STOPPED", deployment_status="Complete", when="after `ray job stop`")
    assert not ray.status(obj).get("failed"), \
        f"a stopped job is not a failure: status.failed must stay 0; observed {describe_rayjob(obj)}"
    cluster.must_be_gone(after="the stopped job finished (shutdownAfterJobFinishes)")
