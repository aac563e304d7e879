"""RayJob validation: an invalid RayJob is reported as such and nothing is created for it."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import rayjob_must_fail_validation


@pytest.mark.feature("RayJobValidation")
def test_invalid_rayjob_fails_validation_and_creates_nothing(k8s, namespace, ray_version, timeouts):
    """A RayJob the operator finds invalid (ttlSecondsAfterFinished without shutdownAfterJobFinishes) reports
    jobDeploymentStatus ValidationFailed with reason ValidationFailed, and no RayCluster, Job or Pod is created
    for it."""
    body = ray.sample("rayjob-invalid", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the status says the spec is invalid
    rayjob_must_fail_validation(k8s, namespace, name, timeouts.short,
                                why="ttlSecondsAfterFinished set with shutdownAfterJobFinishes false")

    # step 2: nothing was created for it
    clusters = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]
    jobs = [j.metadata.name for j in client.BatchV1Api(k8s).list_namespaced_job(namespace).items]
    pods = [p.metadata.name for p in client.CoreV1Api(k8s).list_namespaced_pod(namespace).items]
    assert not (clusters or jobs or pods), (f"an invalid RayJob must create nothing; observed RayClusters {clusters}, "
                                            f"Jobs {jobs}, Pods {pods}")
