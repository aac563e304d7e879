"""RayJob validation: an invalid RayJob is reported as such and nothing is created for it."""
from __future__ import annotations

import pytest


@pytest.mark.feature("RayJobValidation")
@pytest.mark.samples("rayjob-invalid")
def test_invalid_rayjob_fails_validation_and_creates_nothing(ctx):
    """A RayJob the operator finds invalid (ttlSecondsAfterFinished without shutdownAfterJobFinishes) reports
    jobDeploymentStatus ValidationFailed with reason ValidationFailed, and no RayCluster, Job or Pod is created
    for it."""
    job = ctx.create_rayjob("rayjob-invalid")

    # step 1: the status says the spec is invalid
    job.must_fail_validation(why="ttlSecondsAfterFinished set with shutdownAfterJobFinishes false")

    # step 2: nothing was created for it
    clusters = [c["metadata"]["name"] for c in ctx.resources("RayCluster").list()]
    jobs = [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items]
    pods = [p.metadata.name for p in ctx.core.list_namespaced_pod(ctx.namespace).items]
    assert not (clusters or jobs or pods), (f"an invalid RayJob must create nothing; observed RayClusters {clusters}, "
                                            f"Jobs {jobs}, Pods {pods}")
