"""RayJob failure handling: activeDeadlineSeconds ends a job for good; backoffLimit retries a failed job, each
attempt on a new RayCluster."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayjob import (rayjob_must_fail_after_attempts, rayjob_must_finish,
                                                   rayjob_must_stay_failed, seconds)


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
