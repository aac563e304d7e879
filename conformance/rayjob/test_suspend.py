"""RayJob suspension: a suspended RayJob creates nothing; resuming runs it; suspending a running one tears down."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.created import none_must_be_created
from rayconformance.testing.watch import Watch

# how long a RayJob created suspended is watched to create nothing
QUIET_WINDOW_S = 20


def ray_cluster_names(ctx) -> list[str]:
    return [c["metadata"]["name"] for c in ctx.resources("RayCluster").list()]


@pytest.mark.feature("RayJobSuspend")
@pytest.mark.samples("rayjob-basic")
def test_created_suspended_then_resumed(ctx):
    """A RayJob created suspended reports Suspended and creates neither a RayCluster nor a submitter Job, not even
    one it deletes again (watched from before its creation, through a quiet window); once resumed it runs to
    jobStatus SUCCEEDED."""
    body = ctx.sample("rayjob-basic")
    body["spec"]["suspend"] = True
    with ctx.watch("RayCluster") as clusters, \
            Watch(ctx.batch.list_namespaced_job, ctx.namespace, what=f"the Jobs in {ctx.namespace}") as jobs:
        job = ctx.create_rayjob(body)
        job.must_be_suspended()
        job.must_keep_deployment_status("Suspended", QUIET_WINDOW_S, why="it was created with spec.suspend true")
    through = f"RayJob {job.name} created suspended, until resumed"
    none_must_be_created(clusters, "RayCluster", through=through)
    none_must_be_created(jobs, "submitter Job", through=through)

    job.patch({"spec": {"suspend": False}})
    job.must_finish(job_status="SUCCEEDED", when="once resumed")


@pytest.mark.feature("RayJobSuspend")
@pytest.mark.samples("rayjob-basic")
def test_suspending_running_job_tears_down_cluster(ctx):
    """Suspending a running RayJob brings it to Suspended and deletes its RayCluster and its submitter Job;
    resuming it runs the job again, on a new RayCluster."""
    body = ctx.sample("rayjob-basic")
    body["spec"]["entrypoint"] = "python -c \"import time; [time.sleep(1) for _ in range(600)]\""
    job = ctx.create_rayjob(body)
    cluster = ray.status(job.must_be_running())["rayClusterName"]

    job.patch({"spec": {"suspend": True}})
    job.must_be_suspended(ctx.timeouts.long)
    assert cluster not in ray_cluster_names(ctx), \
        f"suspending a running RayJob must delete its RayCluster {cluster}"
    assert not job.submitter_jobs(), "suspending a running RayJob must delete its submitter Job"

    job.patch({"spec": {"suspend": False}})
    again = ray.status(job.must_be_running(ctx.timeouts.long)).get("rayClusterName")
    assert again and again != cluster, \
        f"a resumed RayJob runs on a new RayCluster (its old one, {cluster}, was deleted); observed {again!r}"
