"""RayJob in K8sJobMode: the cluster comes up, a submitter Job runs the entrypoint, status reaches its end."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayjob import (describe_rayjob, rayjob_must_create_its_cluster, rayjob_must_finish,
                                                   rayjob_must_succeed)

from .helpers import submitter_jobs, submitter_pods


@pytest.mark.feature("RayJobK8sJobMode")
def test_job_runs_to_completion_and_cluster_is_removed(k8s, namespace, ray_version, timeouts):
    """A RayJob creates its RayCluster, runs its entrypoint through one submitter Job whose log shows the
    entrypoint's output, ends SUCCEEDED/Complete with a job id, and (shutdownAfterJobFinishes) deletes the
    RayCluster afterwards."""
    body = ray.sample("rayjob-basic", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    cluster = rayjob_must_create_its_cluster(k8s, namespace, name, timeouts.medium)
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long)
    assert ray.status(obj).get("jobId"), f"status.jobId not set: {describe_rayjob(obj)}"

    jobs = submitter_jobs(k8s, namespace, name)
    assert len(jobs) == 1, f"expected one submitter Job owned by the RayJob, observed {[j.metadata.name for j in jobs]}"
    pods = submitter_pods(k8s, namespace, name)
    assert pods, "no submitter Pod found"
    logs = client.CoreV1Api(k8s).read_namespaced_pod_log(pods[-1].metadata.name, namespace)
    assert "rayconformance says 42" in logs, f"the entrypoint's output is missing from the submitter log:\n{logs[-1500:]}"

    raycluster_must_be_gone(k8s, namespace, cluster, timeouts.medium,
                            after="the job finished (shutdownAfterJobFinishes)")


@pytest.mark.feature("RayJobK8sJobMode")
def test_failing_entrypoint_ends_failed(k8s, namespace, ray_version, timeouts):
    """A RayJob whose entrypoint exits non-zero ends with jobStatus FAILED, jobDeploymentStatus Failed and
    reason AppFailed (the application failed, not the submission)."""
    body = ray.sample("rayjob-basic", ray_version)
    body["metadata"]["name"] = "fails"
    body["spec"]["entrypoint"] = "python -c \"import sys; print('about to fail'); sys.exit(3)\""
    ray.RayResources(k8s, namespace, "RayJob").create(body)
    rayjob_must_finish(k8s, namespace, "fails", timeouts.long, job_status="FAILED", deployment_status="Failed",
                       reason="AppFailed", when="for an entrypoint exiting 3")
