"""RayJob validation: an invalid RayJob is reported as such, with a Warning event saying why, and nothing is created
for it."""
from __future__ import annotations

import copy

import pytest

from rayconformance.testing.expect.events import warning_events_must_be_recorded

# name longer than the 47 characters a RayJob may have (its RayCluster's name, 53 at most, is made from it)
TOO_LONG = "a" + "b" * 47


def runtime_env_not_yaml(body: dict) -> None:
    body["spec"]["shutdownAfterJobFinishes"] = True
    body["spec"]["runtimeEnvYAML"] = "[not: yaml"


def name_too_long(body: dict) -> None:
    body["spec"]["shutdownAfterJobFinishes"] = True
    body["spec"].pop("ttlSecondsAfterFinished")
    body["metadata"]["name"] = TOO_LONG


def cluster_spec(edit):
    """The sample made valid but for its rayClusterSpec, which `edit` makes what a RayJob's cluster may not be."""
    def make_invalid(body: dict) -> None:
        body["spec"]["shutdownAfterJobFinishes"] = True
        edit(body["spec"]["rayClusterSpec"])
    return make_invalid


@cluster_spec
def k8s_token_auth(spec: dict) -> None:
    spec["authOptions"] = {"mode": "token", "enableK8sTokenAuth": True}


@cluster_spec
def head_labels_in_start_params(spec: dict) -> None:
    spec["headGroupSpec"]["rayStartParams"]["labels"] = "conformance-tier=head"


@cluster_spec
def worker_labels_in_start_params(spec: dict) -> None:
    template = copy.deepcopy(spec["headGroupSpec"]["template"])
    template["spec"]["containers"][0]["name"] = "ray-worker"
    spec["workerGroupSpecs"] = [{"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                                 "rayStartParams": {"labels": "conformance-tier=worker"}, "template": template}]


@cluster_spec
def head_redis_username(spec: dict) -> None:
    spec["headGroupSpec"]["rayStartParams"]["redis-username"] = "conformance"


LABELS = "RayClusterGroupLabelsAndResources"  # KubeRay 1.5+ refuses labels and a Redis user in rayStartParams
# how the sample is made invalid, what is invalid, the Warning event's reason; the cluster specs a RayJob may not have
# are refused by its own validation (KubeRay's ValidateRayJobSpec applies the RayCluster checks to rayClusterSpec)
INVALID = [
    pytest.param(None, "ttlSecondsAfterFinished set with shutdownAfterJobFinishes false", "InvalidRayJobSpec",
                 id="ttl-without-shutdown"),
    pytest.param(runtime_env_not_yaml, "runtimeEnvYAML that is not YAML", "InvalidRayJobSpec",
                 id="runtime-env-not-yaml"),
    pytest.param(name_too_long, f"a name of {len(TOO_LONG)} characters (at most 47)", "InvalidRayJobMetadata",
                 id="name-too-long"),
    pytest.param(k8s_token_auth, "Kubernetes token authentication in rayClusterSpec", "InvalidRayJobSpec",
                 id="k8s-token-auth", marks=[pytest.mark.feature("RayClusterK8sTokenAuth"), pytest.mark.covers(
                     "RayJob:spec.rayClusterSpec.authOptions.enableK8sTokenAuth")]),
    pytest.param(head_labels_in_start_params, "node labels in the head's rayStartParams", "InvalidRayJobSpec",
                 id="head-labels-in-start-params", marks=[pytest.mark.feature(LABELS), pytest.mark.covers(
                     "RayJob:spec.rayClusterSpec.headGroupSpec.rayStartParams[labels]")]),
    pytest.param(worker_labels_in_start_params, "node labels in a worker group's rayStartParams", "InvalidRayJobSpec",
                 id="worker-labels-in-start-params", marks=[pytest.mark.feature(LABELS), pytest.mark.covers(
                     "RayJob:spec.rayClusterSpec.workerGroupSpecs[].rayStartParams[labels]")]),
    pytest.param(head_redis_username, "a Redis user name in the head's rayStartParams", "InvalidRayJobSpec",
                 id="head-redis-username", marks=[pytest.mark.feature(LABELS), pytest.mark.covers(
                     "RayJob:spec.rayClusterSpec.headGroupSpec.rayStartParams[redis-username]")]),
]


@pytest.mark.feature("RayJobValidation")
@pytest.mark.samples("rayjob-invalid")
@pytest.mark.parametrize("make_invalid,why,reason", INVALID)
def test_invalid_rayjob_fails_validation_and_creates_nothing(ctx, make_invalid, why, reason):
    """A RayJob the operator finds invalid (ttlSecondsAfterFinished without shutdownAfterJobFinishes, a
    runtimeEnvYAML that does not parse, a name too long for its RayCluster's; a rayClusterSpec with Kubernetes token
    authentication, which a RayJob's cluster may not have, or with what a RayCluster may not have: node labels in a
    group's rayStartParams, a Redis user name in the head's) reports jobDeploymentStatus ValidationFailed with reason
    ValidationFailed and a Warning event naming the invalid part, and no RayCluster, Job or Pod is created for it."""
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
