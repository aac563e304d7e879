"""RayJob failure handling: activeDeadlineSeconds ends a job for good; backoffLimit retries a failed job (in
every submission mode) or a failed submission, each attempt on a new RayCluster; a submission that cannot reach
the cluster, and a job that cannot start before its preRunningDeadlineSeconds, end Failed with their own
reasons."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob, seconds

from rayconformance.testing.axes import in_mode, submission_modes


@pytest.mark.feature("RayJobDeadlines")
@pytest.mark.samples("rayjob-deadline")
def test_active_deadline_ends_job_without_retry(ctx):
    """A RayJob that runs past its activeDeadlineSeconds ends Failed with reason DeadlineExceeded, no earlier
    than the deadline, and is not retried even though its backoffLimit would allow it."""
    body = ctx.sample("rayjob-deadline")
    deadline = body["spec"]["activeDeadlineSeconds"]
    job = ctx.create_rayjob(body)

    # step 1: the job ends at its deadline, with the deadline's reason
    obj = job.must_finish(deployment_status="Failed", reason="DeadlineExceeded",
                          when=f"once activeDeadlineSeconds={deadline} passed")
    s = ray.status(obj)
    ran = seconds(s["endTime"]) - seconds(s["startTime"])
    assert ran >= deadline - 1, (f"expected RayJob {job.name} to end no earlier than activeDeadlineSeconds="
                                 f"{deadline} after its start; observed it ended after {ran:.0f}s")

    # step 2: no retry (backoffLimit does not apply to a job past its deadline)
    job.must_stay_failed(10, why=f"past activeDeadlineSeconds, whatever backoffLimit={body['spec']['backoffLimit']}")


@pytest.mark.feature("RayJobRetries")
@pytest.mark.parametrize("mode", submission_modes())
@pytest.mark.samples("rayjob-retries")
def test_backoff_limit_retries_on_new_clusters(ctx, mode):
    """A RayJob with backoffLimit 2 whose entrypoint always fails is attempted three times, in every submission
    mode, each attempt on a new RayCluster (the previous one deleted), and ends Failed with reason AppFailed and
    status.failed 3. In K8sJobMode the application's failure is not the submitter's: the last attempt's
    submitter Job succeeded once and failed never."""
    body = in_mode(ctx.sample("rayjob-retries"), mode)
    job = ctx.create_rayjob(body)

    # step 1: three failed attempts on three RayClusters, then Failed for good
    obj, clusters = job.must_fail_after_attempts(body["spec"]["backoffLimit"] + 1, reason="AppFailed")
    assert ray.status(obj).get("jobStatus") == "FAILED", \
        f"expected the last attempt's Ray job to have FAILED (jobStatus=FAILED); observed {describe_rayjob(obj)}"

    # step 2: the submitter Job of the last attempt ran its submitter to success (K8sJobMode)
    if mode == "K8sJobMode":
        counts = [(j.metadata.name, j.status.succeeded or 0, j.status.failed or 0) for j in job.submitter_jobs()]
        assert [c[1:] for c in counts] == [(1, 0)], \
            (f"expected one submitter Job, succeeded 1 and failed 0 (the application failed, not the submission); "
             f"observed (name, succeeded, failed) {counts}")

    # step 3: the RayClusters of the failed attempts were deleted by the retries
    for cluster in clusters[:-1]:
        ctx.raycluster(cluster).must_be_gone(after="RayJob retried on a new RayCluster")


@pytest.mark.feature("RayJobRetries", "RayJobSubmissionFailure")
@pytest.mark.samples("rayjob-submission-failure")
def test_backoff_limit_retries_failed_submissions(ctx):
    """A RayJob with backoffLimit 2 whose submitter Job cannot reach the Ray cluster (submitterConfig.backoffLimit
    0: one submitter Pod per attempt) is attempted three times, each on a new RayCluster, and ends Failed with
    reason SubmissionFailed, status.failed 3 and no Ray job status; (shutdownAfterJobFinishes) its last RayCluster
    is deleted too."""
    body = ctx.sample("rayjob-submission-failure")
    body["metadata"]["name"] = "retried-submission"
    body["spec"]["backoffLimit"] = 2
    body["spec"]["submitterConfig"] = {"backoffLimit": 0}
    job = ctx.create_rayjob(body)

    # step 1: three failed submissions on three RayClusters, then Failed for good
    obj, clusters = job.must_fail_after_attempts(3, reason="SubmissionFailed")
    assert not ray.status(obj).get("jobStatus"), \
        f"no Ray job ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"

    # step 2: every attempt's RayCluster is deleted: by the retries, the last one as the job finished
    for cluster in clusters:
        ctx.raycluster(cluster).must_be_gone(after="RayJob retried on a new RayCluster, or finished")


@pytest.mark.feature("RayJobSubmissionFailure")
@pytest.mark.samples("rayjob-submission-failure")
def test_unreachable_submission_ends_submission_failed(ctx):
    """A RayJob whose submitter cannot reach the Ray cluster ends Failed with reason SubmissionFailed (not
    AppFailed: no Ray job ever ran, jobStatus stays empty) once its submitter Job has failed; that Job runs the
    submitter submitterConfig.backoffLimit + 1 times, each time in a new Pod."""
    body = ctx.sample("rayjob-submission-failure")
    limit = body["spec"]["submitterConfig"]["backoffLimit"]
    job = ctx.create_rayjob(body)

    # step 1: the RayJob ends with the submission's failure
    obj = job.must_finish(deployment_status="Failed", reason="SubmissionFailed",
                          when="when its submitter cannot reach the Ray cluster")
    assert not ray.status(obj).get("jobStatus"), \
        f"no Ray job ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"

    # step 2: the submitter Job tried backoffLimit + 1 times
    jobs = job.submitter_jobs()
    assert [j.spec.backoff_limit for j in jobs] == [limit], \
        (f"expected one submitter Job with backoffLimit {limit} (submitterConfig.backoffLimit); observed "
         f"{[(j.metadata.name, j.spec.backoff_limit) for j in jobs]}")
    pods = [(p.metadata.name, p.status.phase) for p in job.submitter_pods()]
    assert len(pods) == limit + 1 and all(phase == "Failed" for _, phase in pods), \
        f"expected {limit + 1} failed submitter Pods (backoffLimit {limit} + 1); observed {pods}"


@pytest.mark.feature("RayJobPreRunningDeadline")
@pytest.mark.samples("rayjob-pre-running-deadline")
def test_pre_running_deadline_ends_job_that_cannot_start(ctx):
    """A RayJob whose RayCluster cannot come up (its head Pod cannot be scheduled) ends Failed with reason
    PreRunningDeadlineExceeded once preRunningDeadlineSeconds have passed since it started, not earlier; its
    job never ran (jobStatus empty, no submitter Job)."""
    body = ctx.sample("rayjob-pre-running-deadline")
    deadline = body["spec"]["preRunningDeadlineSeconds"]
    job = ctx.create_rayjob(body)

    # step 1: the job ends at its pre-running deadline, with that deadline's reason
    obj = job.must_finish(ctx.timeouts.medium, deployment_status="Failed", reason="PreRunningDeadlineExceeded",
                          when=f"once preRunningDeadlineSeconds={deadline} passed without the job running")
    s = ray.status(obj)
    waited = seconds(s["endTime"]) - seconds(s["startTime"])
    assert waited >= deadline - 1, (f"expected RayJob {job.name} to end no earlier than preRunningDeadlineSeconds="
                                    f"{deadline} after its start; observed it ended after {waited:.0f}s")

    # step 2: nothing ran
    assert not s.get("jobStatus"), f"the job never ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"
    jobs = [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items]
    assert not jobs, f"expected no submitter Job for a RayJob whose cluster never came up; observed Jobs {jobs}"
