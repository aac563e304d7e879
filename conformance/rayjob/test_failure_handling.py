"""RayJob failure handling: activeDeadlineSeconds ends a job for good; backoffLimit retries a failed job, each
attempt on a new RayCluster; a submission that cannot reach the cluster, and a job that cannot start before
its preRunningDeadlineSeconds, end Failed with their own reasons."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayjob import (describe_rayjob, rayjob_must_fail_after_attempts,
                                                   rayjob_must_finish, rayjob_must_stay_failed, seconds)

from .helpers import submitter_jobs, submitter_pods


@pytest.mark.feature("RayJobDeadlines")
def test_active_deadline_ends_job_without_retry(k8s, namespace, ray_version, timeouts):
    """A RayJob that runs past its activeDeadlineSeconds ends Failed with reason DeadlineExceeded, no earlier
    than the deadline, and is not retried even though its backoffLimit would allow it."""
    body = ray.sample("rayjob-deadline", ray_version)
    name, deadline = body["metadata"]["name"], body["spec"]["activeDeadlineSeconds"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the job ends at its deadline, with the deadline's reason
    obj = rayjob_must_finish(k8s, namespace, name, timeouts.long, deployment_status="Failed",
                             reason="DeadlineExceeded", when=f"once activeDeadlineSeconds={deadline} passed")
    s = ray.status(obj)
    ran = seconds(s["endTime"]) - seconds(s["startTime"])
    assert ran >= deadline - 1, (f"expected RayJob {name} to end no earlier than activeDeadlineSeconds={deadline} "
                                 f"after its start; observed it ended after {ran:.0f}s")

    # step 2: no retry (backoffLimit does not apply to a job past its deadline)
    rayjob_must_stay_failed(k8s, namespace, name, 10,
                            why=f"past activeDeadlineSeconds, whatever backoffLimit={body['spec']['backoffLimit']}")


@pytest.mark.feature("RayJobRetries")
def test_backoff_limit_retries_on_new_clusters(k8s, namespace, ray_version, timeouts):
    """A RayJob with backoffLimit 2 whose entrypoint always fails is attempted three times, each attempt on a
    new RayCluster (the previous one deleted), and ends Failed with reason AppFailed and status.failed 3."""
    body = ray.sample("rayjob-retries", ray_version)
    name, attempts = body["metadata"]["name"], body["spec"]["backoffLimit"] + 1
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: three failed attempts on three RayClusters, then Failed for good
    _, clusters = rayjob_must_fail_after_attempts(k8s, namespace, name, attempts, timeouts.long, reason="AppFailed")

    # step 2: the RayClusters of the failed attempts were deleted by the retries
    for cluster in clusters[:-1]:
        raycluster_must_be_gone(k8s, namespace, cluster, timeouts.medium, after="RayJob retried on a new RayCluster")


@pytest.mark.feature("RayJobSubmissionFailure")
def test_unreachable_submission_ends_submission_failed(k8s, namespace, ray_version, timeouts):
    """A RayJob whose submitter cannot reach the Ray cluster ends Failed with reason SubmissionFailed (not
    AppFailed: no Ray job ever ran, jobStatus stays empty) once its submitter Job has failed; that Job runs the
    submitter submitterConfig.backoffLimit + 1 times, each time in a new Pod."""
    body = ray.sample("rayjob-submission-failure", ray_version)
    name, limit = body["metadata"]["name"], body["spec"]["submitterConfig"]["backoffLimit"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the RayJob ends with the submission's failure
    obj = rayjob_must_finish(k8s, namespace, name, timeouts.long, deployment_status="Failed",
                             reason="SubmissionFailed", when="when its submitter cannot reach the Ray cluster")
    assert not ray.status(obj).get("jobStatus"), \
        f"no Ray job ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"

    # step 2: the submitter Job tried backoffLimit + 1 times
    jobs = submitter_jobs(k8s, namespace, name)
    assert [j.spec.backoff_limit for j in jobs] == [limit], \
        (f"expected one submitter Job with backoffLimit {limit} (submitterConfig.backoffLimit); observed "
         f"{[(j.metadata.name, j.spec.backoff_limit) for j in jobs]}")
    pods = [(p.metadata.name, p.status.phase) for p in submitter_pods(k8s, namespace, name)]
    assert len(pods) == limit + 1 and all(phase == "Failed" for _, phase in pods), \
        f"expected {limit + 1} failed submitter Pods (backoffLimit {limit} + 1); observed {pods}"


@pytest.mark.feature("RayJobPreRunningDeadline")
def test_pre_running_deadline_ends_job_that_cannot_start(k8s, namespace, ray_version, timeouts):
    """A RayJob whose RayCluster cannot come up (its head Pod cannot be scheduled) ends Failed with reason
    PreRunningDeadlineExceeded once preRunningDeadlineSeconds have passed since it started, not earlier; its
    job never ran (jobStatus empty, no submitter Job)."""
    body = ray.sample("rayjob-pre-running-deadline", ray_version)
    name, deadline = body["metadata"]["name"], body["spec"]["preRunningDeadlineSeconds"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the job ends at its pre-running deadline, with that deadline's reason
    obj = rayjob_must_finish(k8s, namespace, name, timeouts.medium, deployment_status="Failed",
                             reason="PreRunningDeadlineExceeded",
                             when=f"once preRunningDeadlineSeconds={deadline} passed without the job running")
    s = ray.status(obj)
    waited = seconds(s["endTime"]) - seconds(s["startTime"])
    assert waited >= deadline - 1, (f"expected RayJob {name} to end no earlier than preRunningDeadlineSeconds="
                                    f"{deadline} after its start; observed it ended after {waited:.0f}s")

    # step 2: nothing ran
    assert not s.get("jobStatus"), f"the job never ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"
    jobs = [j.metadata.name for j in client.BatchV1Api(k8s).list_namespaced_job(namespace).items]
    assert not jobs, f"expected no submitter Job for a RayJob whose cluster never came up; observed Jobs {jobs}"
