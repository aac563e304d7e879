"""RayJob status-check timeout (KubeRay 1.7): a running job whose status the operator can no longer read ends
Failed for good once the checks have failed for the operator's timeout."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob, seconds

# RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: the operator's default (the profiles leave it unset)
STATUS_CHECK_TIMEOUT_S = 300


@pytest.mark.feature("RayJobStatusCheckTimeout")
@pytest.mark.samples("rayjob-long-running")
def test_unreachable_job_ends_with_status_check_timeout(ctx):
    """A running RayJob whose head the operator can no longer reach (the head Pod's network cut) records when its
    status checks started failing (status.jobStatusCheckFailureStartTime) and, once they have failed for the
    operator's timeout (300 s by default), ends Failed with reason JobStatusCheckTimeoutExceeded, not earlier, and
    is not retried."""
    if not ctx.provider.supports("cut_pod_network"):  # e.g. kind: a Pod's network cannot be cut from outside
        pytest.skip(f"provider {ctx.provider.name} cannot cut a running Pod's network")
    job = ctx.create_rayjob("rayjob-long-running")

    # step 1: the job runs
    job.must_be_running()
    heads = job.cluster().pods("head")
    assert len(heads) == 1, f"expected one head Pod for RayJob {job.name}, observed {len(heads)}"

    # step 2: the operator loses sight of it
    ctx.provider.cut_pod_network(heads[0])

    # step 3: it ends for good once the checks have failed long enough
    obj = job.must_finish(ctx.timeouts.long + STATUS_CHECK_TIMEOUT_S, deployment_status="Failed",
                          reason="JobStatusCheckTimeoutExceeded",
                          when=f"once its status checks failed for {STATUS_CHECK_TIMEOUT_S}s")
    s = ray.status(obj)
    started = s.get("jobStatusCheckFailureStartTime")
    assert started, f"expected status.jobStatusCheckFailureStartTime to be recorded; observed {describe_rayjob(obj)}"
    failed_for = seconds(s["endTime"]) - seconds(started)
    assert failed_for >= STATUS_CHECK_TIMEOUT_S - 1, \
        (f"expected RayJob {job.name} to end no earlier than {STATUS_CHECK_TIMEOUT_S}s after its status checks "
         f"started failing ({started}); observed it ended after {failed_for:.0f}s")
    job.must_stay_failed(10, why="a status-check timeout is not retried")
