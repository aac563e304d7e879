"""RayJob in K8sJobMode: the cluster comes up, a submitter Job runs the entrypoint, status reaches its end."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import cluster_exists, describe, status, submitter_jobs, submitter_pods

TERMINAL = ("Complete", "Failed")


def finished(rj: ray.RayResources, name: str):
    obj = rj.get(name)
    return status(obj).get("jobDeploymentStatus") in TERMINAL, obj


@pytest.mark.feature("RayJobK8sJobMode")
def test_job_runs_to_completion_and_cluster_is_removed(k8s, namespace, ray_version, timeouts):
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    name = body["metadata"]["name"]
    rj.create(body)

    running = wait_for(lambda: (bool(status(o := rj.get(name)).get("rayClusterName")), o), timeouts.medium,
                       "the RayJob to name its RayCluster", observe=lambda: describe(rj.get(name)))
    cluster = status(running)["rayClusterName"]
    wait_for(lambda: (cluster_exists(k8s, namespace, cluster) or status(rj.get(name)).get("jobDeploymentStatus")
                      in TERMINAL, True), timeouts.medium, f"RayCluster {cluster} to be created",
             observe=lambda: describe(rj.get(name)))

    obj = wait_for(lambda: finished(rj, name), timeouts.long, "jobDeploymentStatus Complete or Failed",
                   observe=lambda: describe(rj.get(name)))
    s = status(obj)
    assert (s.get("jobStatus"), s.get("jobDeploymentStatus")) == ("SUCCEEDED", "Complete"), \
        f"expected jobStatus=SUCCEEDED, jobDeploymentStatus=Complete; observed {describe(obj)}"
    assert s.get("jobId"), f"status.jobId not set: {describe(obj)}"

    jobs = submitter_jobs(k8s, namespace, name)
    assert len(jobs) == 1, f"expected one submitter Job owned by the RayJob, observed {[j.metadata.name for j in jobs]}"
    pods = submitter_pods(k8s, namespace, name)
    assert pods, "no submitter Pod found"
    logs = client.CoreV1Api(k8s).read_namespaced_pod_log(pods[-1].metadata.name, namespace)
    assert "rayconformance says 42" in logs, f"the entrypoint's output is missing from the submitter log:\n{logs[-1500:]}"

    wait_for(lambda: (not cluster_exists(k8s, namespace, cluster), True), timeouts.medium,
             f"shutdownAfterJobFinishes to delete RayCluster {cluster}",
             observe=lambda: f"RayCluster {cluster} still exists")


@pytest.mark.feature("RayJobK8sJobMode")
def test_failing_entrypoint_ends_failed(k8s, namespace, ray_version, timeouts):
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["metadata"]["name"] = "fails"
    body["spec"]["entrypoint"] = "python -c \"import sys; print('about to fail'); sys.exit(3)\""
    rj.create(body)
    obj = wait_for(lambda: finished(rj, "fails"), timeouts.long, "jobDeploymentStatus Complete or Failed",
                   observe=lambda: describe(rj.get("fails")))
    s = status(obj)
    assert s.get("jobStatus") == "FAILED" and s.get("jobDeploymentStatus") == "Failed", \
        f"expected jobStatus=FAILED, jobDeploymentStatus=Failed for an entrypoint exiting 3; observed {describe(obj)}"
