"""RayJob lifecycle: a Ray job still running after its submitter finished, the RayCluster's status shown in the
RayJob's, a job waiting too long for its job id, and what becomes of a finished RayJob's RayCluster and
submitter Job (when suspended, deleted, or after a failed submission)."""
from __future__ import annotations

import time

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import (describe_rayjob, rayjob_must_mirror_cluster_status,
                                                   rayjob_submitter_must_complete, seconds)
from rayconformance.testing.waiting import wait_until

from rayconformance.testing.axes import in_mode, submission_modes, submitter_must_match_mode

# How long a RayJob waits for its Ray job to end once its submitter has finished (KubeRay: 30 s, not configurable).
SUBMITTER_GRACE_S = 30
# preRunningDeadlineSeconds for a job waiting for its job id: long enough for its RayCluster to come up first.
WAITING_DEADLINE_S = 90
# How long a finished RayJob is watched after `suspend` is set on it.
SUSPEND_WATCH_S = 20


def submitter_job_names(job) -> list[str]:
    return [j.metadata.name for j in job.submitter_jobs()]


@pytest.mark.feature("RayJobSubmitterFinishedTimeout")
@pytest.mark.samples("rayjob-submitter-exits-early")
def test_job_outliving_its_submitter_ends_failed_after_grace(ctx):
    """A RayJob whose submitter finishes (exits 0) while its Ray job still runs does not wait for that job: 30
    seconds after the submitter finished, no earlier, it ends Failed with reason
    JobDeploymentStatusTransitionGracePeriodExceeded."""
    body = ctx.sample("rayjob-submitter-exits-early")
    job = ctx.create_rayjob(body)

    # step 1: the Ray job runs
    job.must_be_running()

    # step 2: its submitter finishes while the Ray job runs on (a 5-minute job)
    submitter = rayjob_submitter_must_complete(ctx.k8s, ctx.namespace, job.name, ctx.timeouts.medium)
    finished = next(c.last_transition_time for c in submitter.status.conditions if c.type == "Complete").timestamp()

    # step 3: the RayJob ends with the grace period's reason, once the grace period has passed
    obj = job.must_finish(deployment_status="Failed", reason="JobDeploymentStatusTransitionGracePeriodExceeded",
                          when=f"{SUBMITTER_GRACE_S}s after its submitter finished while the Ray job still ran")
    waited = seconds(ray.status(obj)["endTime"]) - finished
    assert waited >= SUBMITTER_GRACE_S - 1, \
        (f"expected RayJob {job.name} to end no earlier than {SUBMITTER_GRACE_S}s after its submitter Job "
         f"{submitter.metadata.name} completed; observed it ended {waited:.0f}s after")


@pytest.mark.feature("RayJobClusterStatus")
@pytest.mark.samples("rayjob-cluster-status")
def test_rayjob_shows_its_cluster_status(ctx):
    """A running RayJob shows its RayCluster's status in status.rayClusterStatus (state, worker replica bounds
    and counts, head), and follows it when the RayCluster's status changes (its worker group allowed a second
    worker: maxWorkerReplicas 1 -> 2)."""
    job = ctx.create_rayjob("rayjob-cluster-status")

    # step 1: while the job runs, the RayJob shows its RayCluster's status
    job.must_be_running()
    cluster = job.cluster()
    rayjob_must_mirror_cluster_status(ctx.k8s, ctx.namespace, job.name, cluster.name, ctx.timeouts.short,
                                      why="while the job runs")

    # step 2: the RayCluster's status changes, and the RayJob's follows
    groups = cluster.get()["spec"]["workerGroupSpecs"]
    groups[0]["maxReplicas"] = 2
    cluster.patch({"spec": {"workerGroupSpecs": groups}})
    rayjob_must_mirror_cluster_status(ctx.k8s, ctx.namespace, job.name, cluster.name, ctx.timeouts.short,
                                      expected={"maxWorkerReplicas": 2},
                                      why="after the RayCluster's worker group was allowed 2 workers")


@pytest.mark.feature("RayJobInteractiveMode", "RayJobPreRunningDeadline")
@pytest.mark.samples("rayjob-interactive")
def test_pre_running_deadline_ends_job_waiting_for_job_id(ctx):
    """A RayJob in InteractiveMode whose user never gives it a job id waits (jobDeploymentStatus Waiting) only
    until its preRunningDeadlineSeconds have passed since it started, not less: then it ends Failed with reason
    PreRunningDeadlineExceeded, no job having run."""
    body = ctx.sample("rayjob-interactive")
    body["metadata"]["name"] = "never-given-a-job-id"
    body["spec"]["preRunningDeadlineSeconds"] = WAITING_DEADLINE_S
    job = ctx.create_rayjob(body)

    # step 1: its RayCluster comes up and it waits for a job id
    job.must_wait_for_job_id()

    # step 2: nobody gives it one: it ends at its pre-running deadline, with that deadline's reason
    obj = job.must_finish(deployment_status="Failed", reason="PreRunningDeadlineExceeded",
                          when=f"once preRunningDeadlineSeconds={WAITING_DEADLINE_S} passed while it waited for "
                               f"spec.jobId")
    s = ray.status(obj)
    waited = seconds(s["endTime"]) - seconds(s["startTime"])
    assert waited >= WAITING_DEADLINE_S - 1, \
        (f"expected RayJob {job.name} to end no earlier than preRunningDeadlineSeconds={WAITING_DEADLINE_S} after "
         f"its start; observed it ended after {waited:.0f}s")
    assert not s.get("jobStatus"), f"no job ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"


@pytest.mark.feature("RayJobSuspend")
@pytest.mark.samples("rayjob-basic")
def test_finished_job_ignores_suspend_and_keeps_its_submitter(ctx):
    """A RayJob that SUCCEEDED (shutdownAfterJobFinishes) deletes its RayCluster but keeps its submitter Job;
    setting `suspend` on it afterwards changes nothing: it stays Complete and the submitter Job stays."""
    job = ctx.create_rayjob("rayjob-basic")

    # step 1: the job succeeds; its RayCluster goes, its submitter Job stays
    cluster = job.must_create_its_cluster()
    job.must_succeed()
    cluster.must_be_gone(after="the job finished (shutdownAfterJobFinishes)")
    jobs = submitter_job_names(job)
    assert jobs, (f"expected the submitter Job of RayJob {job.name} to outlive its RayCluster (only the RayCluster "
                  f"is shut down); observed no submitter Job")

    # step 2: suspending the finished RayJob is ignored
    job.patch({"spec": {"suspend": True}})
    job.must_keep_deployment_status("Complete", SUSPEND_WATCH_S, why="suspend set on a RayJob that already finished")
    assert submitter_job_names(job) == jobs, \
        (f"expected suspend on a finished RayJob to leave its submitter Job {jobs}; observed "
         f"{submitter_job_names(job)}")


@pytest.mark.parametrize("mode", submission_modes("K8sJobMode", "HTTPMode"))
@pytest.mark.samples("rayjob-basic")
def test_deleting_failed_job_deletes_its_cluster_and_submitter(ctx, mode):
    """A RayJob whose job FAILED, without shutdownAfterJobFinishes, keeps its RayCluster (and in K8sJobMode its
    submitter Job); once the RayJob is deleted, they are deleted with it, in either mode (KubeRay's e2e checks the
    same of a failed HTTPMode RayJob)."""
    body = in_mode(ctx.sample("rayjob-basic"), mode)
    body["metadata"]["name"] = "fails-then-deleted"
    body["spec"]["shutdownAfterJobFinishes"] = False
    body["spec"]["entrypoint"] = "python -c \"import sys; print('rayconformance job fails'); sys.exit(1)\""
    job = ctx.create_rayjob(body)

    # step 1: the job fails; its RayCluster (and submitter Job) stay
    cluster = job.must_create_its_cluster()
    job.must_finish(job_status="FAILED", deployment_status="Failed", reason="AppFailed", when=f"in {mode}")
    cluster.must_remain(time.time() + 5, why=f"after the job failed in {mode}, without shutdownAfterJobFinishes")
    submitter_must_match_mode(ctx, job, mode)

    # step 2: deleting the RayJob deletes them
    job.delete()
    job.must_be_gone(after="it was deleted")
    cluster.must_be_gone(after=f"its RayJob {job.name} ({mode}) was deleted")
    wait_until(lambda: submitter_job_names(job), lambda names: not names,
               f"the submitter Job of RayJob {job.name} to be gone after the RayJob was deleted", ctx.timeouts.gone)


@pytest.mark.feature("RayJobSubmissionFailure")
@pytest.mark.samples("rayjob-submission-failure")
def test_failed_submission_deletes_cluster_keeps_submitter(ctx):
    """A RayJob whose submission failed (reason SubmissionFailed) with shutdownAfterJobFinishes deletes its
    RayCluster as after any finished job, and keeps its failed submitter Job."""
    job = ctx.create_rayjob("rayjob-submission-failure")

    # step 1: the submission fails
    cluster = job.must_create_its_cluster()
    job.must_finish(deployment_status="Failed", reason="SubmissionFailed",
                    when="when its submitter cannot reach the Ray cluster")

    # step 2: its RayCluster goes, its submitter Job stays
    cluster.must_be_gone(after="the submission failed (shutdownAfterJobFinishes)")
    assert submitter_job_names(job), \
        f"expected RayJob {job.name} to keep its failed submitter Job after its RayCluster went; observed none"
