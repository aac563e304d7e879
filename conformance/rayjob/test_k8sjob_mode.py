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
