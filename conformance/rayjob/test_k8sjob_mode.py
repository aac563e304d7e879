"""A RayJob's run in each submission mode (K8sJobMode, HTTPMode, SidecarMode): the cluster comes up, the job is
submitted the mode's way, and its status reaches the end its Ray job had (succeeded, failed, stopped)."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob

from rayconformance.testing.axes import in_mode, submission_modes, submitter_must_match_mode

OUTPUT = "rayconformance says 42"  # what the samples' entrypoints print


@pytest.mark.parametrize("mode", submission_modes())
@pytest.mark.samples("rayjob-entrypoint-resources")
def test_job_runs_to_completion_and_cluster_is_removed(ctx, mode):
    """A RayJob creates its RayCluster, submits its entrypoint the mode's way (K8sJobMode: one submitter Job
    whose log shows the entrypoint's output; HTTPMode, SidecarMode: no Kubernetes Job) with the resources and
    environment it asks for (entrypointNumCpus, entrypointNumGpus, entrypointResources, runtimeEnvYAML: the
    entrypoint fails unless Ray holds them for it), ends SUCCEEDED/Complete with a job id, and
    (shutdownAfterJobFinishes) deletes the RayCluster afterwards."""
    ctx.create([ctx.sample("rayjob-entrypoint-resources", "ConfigMap")])
    job = ctx.create_rayjob(in_mode(ctx.sample("rayjob-entrypoint-resources", "RayJob"), mode))

    # step 1: the job succeeds, with what it asked for
    cluster = job.must_create_its_cluster()
    obj = job.must_succeed(when=f"in {mode}, given the resources and environment the entrypoint asks for")
    assert ray.status(obj).get("jobId"), f"status.jobId not set: {describe_rayjob(obj)}"

    # step 2: it was submitted the mode's way
    submitter_must_match_mode(ctx, job, mode)
    if mode == "K8sJobMode":
        pods = job.submitter_pods()
        assert pods, "no submitter Pod found"
        logs = ctx.core.read_namespaced_pod_log(pods[-1].metadata.name, ctx.namespace)
        assert OUTPUT in logs, f"the entrypoint's output is missing from the submitter log:\n{logs[-1500:]}"

    # step 3: its RayCluster goes
    cluster.must_be_gone(after=f"the job finished in {mode} (shutdownAfterJobFinishes)")


@pytest.mark.parametrize("mode", submission_modes())
@pytest.mark.samples("rayjob-basic")
def test_failing_entrypoint_ends_failed(ctx, mode):
    """A RayJob whose entrypoint exits non-zero ends with jobStatus FAILED, jobDeploymentStatus Failed and
    reason AppFailed (the application failed, not the submission), in every submission mode; it was submitted
    the mode's way (HTTPMode, SidecarMode: no Kubernetes Job; SidecarMode: a submitter container in the head
    Pod, which the RayJob keeps without shutdownAfterJobFinishes)."""
    body = in_mode(ctx.sample("rayjob-basic"), mode)
    body["metadata"]["name"] = "fails"
    body["spec"]["entrypoint"] = "python -c \"import sys; print('about to fail'); sys.exit(3)\""
    body["spec"]["shutdownAfterJobFinishes"] = False
    job = ctx.create_rayjob(body)

    # step 1: the RayJob ends with the application's failure
    job.must_finish(job_status="FAILED", deployment_status="Failed", reason="AppFailed",
                    when=f"for an entrypoint exiting 3 in {mode}")

    # step 2: it was submitted the mode's way
    submitter_must_match_mode(ctx, job, mode, cluster_kept=True)


@pytest.mark.parametrize("mode", submission_modes())
@pytest.mark.samples("rayjob-basic")
def test_stopped_job_ends_complete_not_failed(ctx, mode):
    """A Ray job its user stops (`ray job stop`) while it runs ends the RayJob with jobStatus STOPPED and
    jobDeploymentStatus Complete, in every submission mode: not Failed, counted as no failure, and
    (shutdownAfterJobFinishes) its RayCluster is deleted as after any finished job."""
    body = in_mode(ctx.sample("rayjob-basic"), mode)
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
    obj = job.must_finish(job_status="STOPPED", deployment_status="Complete", when=f"after `ray job stop` in {mode}")
    assert not ray.status(obj).get("failed"), \
        f"a stopped job is not a failure: status.failed must stay 0; observed {describe_rayjob(obj)}"
    cluster.must_be_gone(after=f"the stopped job finished in {mode} (shutdownAfterJobFinishes)")
