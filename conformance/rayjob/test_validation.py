"""RayJob validation: an invalid RayJob is reported as such, with a Warning event saying why, and nothing is created
for it."""
from __future__ import annotations

import pytest

from rayconformance.fixtures.expect.events import warning_events_must_be_recorded

# name longer than the 47 characters a RayJob may have (its RayCluster's name, 53 at most, is made from it)
TOO_LONG = "a" + "b" * 47


def runtime_env_not_yaml(body: dict) -> None:
    body["spec"]["shutdownAfterJobFinishes"] = True
    body["spec"]["runtimeEnvYAML"] = "[not: yaml"


def name_too_long(body: dict) -> None:
    body["spec"]["shutdownAfterJobFinishes"] = True
    body["spec"].pop("ttlSecondsAfterFinished")
    body["metadata"]["name"] = TOO_LONG


# (case id, how the sample is made invalid, what is invalid, the Warning event's reason)
INVALID = [
    ("ttl-without-shutdown", None, "ttlSecondsAfterFinished set with shutdownAfterJobFinishes false",
     "InvalidRayJobSpec"),
    ("runtime-env-not-yaml", runtime_env_not_yaml, "runtimeEnvYAML that is not YAML", "InvalidRayJobSpec"),
    ("name-too-long", name_too_long, f"a name of {len(TOO_LONG)} characters (at most 47)", "InvalidRayJobMetadata"),
]


@pytest.mark.feature("RayJobValidation")
@pytest.mark.samples("rayjob-invalid")
@pytest.mark.parametrize("invalid", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_rayjob_fails_validation_and_creates_nothing(ctx, invalid):
    """A RayJob the operator finds invalid (ttlSecondsAfterFinished without shutdownAfterJobFinishes, a
    runtimeEnvYAML that does not parse, a name too long for its RayCluster's) reports jobDeploymentStatus
    ValidationFailed with reason ValidationFailed and a Warning event naming the invalid part, and no RayCluster,
    Job or Pod is created for it."""
    _, make_invalid, why, reason = invalid
    body = ctx.sample("rayjob-invalid")
    if make_invalid:
        make_invalid(body)
    job = ctx.create_rayjob(body)

    # step 1: the status says the spec is invalid, and a Warning event says which part
    job.must_fail_validation(why=why)
    warnings = warning_events_must_be_recorded(ctx.k8s, ctx.namespace, job.name, ctx.timeouts.state,
                                               about=f"RayJob {job.name}'s {why}")
    assert any(e.reason == reason for e in warnings), \
        f"expected a Warning event with reason {reason} about {why}; observed {[str(e) for e in warnings]}"

    # step 2: nothing was created for it
    clusters = [c["metadata"]["name"] for c in ctx.resources("RayCluster").list()]
    jobs = [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items]
    pods = [p.metadata.name for p in ctx.core.list_namespaced_pod(ctx.namespace).items]
    assert not (clusters or jobs or pods), (f"an invalid RayJob must create nothing; observed RayClusters {clusters}, "
                                            f"Jobs {jobs}, Pods {pods}")
