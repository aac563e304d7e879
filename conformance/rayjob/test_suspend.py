"""RayJob suspension: a suspended RayJob creates nothing; resuming runs it; suspending a running one tears down."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import rayjob_must_be_running, rayjob_must_be_suspended, rayjob_must_finish

from .helpers import submitter_jobs


def ray_cluster_names(k8s, namespace: str) -> list[str]:
    return [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]


@pytest.mark.feature("RayJobSuspend")
def test_created_suspended_then_resumed(k8s, namespace, ray_version, timeouts):
    """A RayJob created suspended reports Suspended and creates neither a RayCluster nor a submitter Job;
    once resumed it runs to jobStatus SUCCEEDED."""
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["suspend"] = True
    name = body["metadata"]["name"]
    rj.create(body)
    rayjob_must_be_suspended(k8s, namespace, name, timeouts.medium)
    assert not ray_cluster_names(k8s, namespace), \
        f"a suspended RayJob must not create a RayCluster; found {ray_cluster_names(k8s, namespace)}"
    assert not submitter_jobs(k8s, namespace, name), "a suspended RayJob must not create a submitter Job"

    rj.patch(name, {"spec": {"suspend": False}})
    rayjob_must_finish(k8s, namespace, name, timeouts.long, job_status="SUCCEEDED", when="once resumed")


@pytest.mark.feature("RayJobSuspend")
def test_suspending_running_job_tears_down_cluster(k8s, namespace, ray_version, timeouts):
    """Suspending a running RayJob brings it to Suspended and deletes its RayCluster and its submitter Job."""
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["entrypoint"] = "python -c \"import time; [time.sleep(1) for _ in range(600)]\""
    name = body["metadata"]["name"]
    rj.create(body)
    cluster = ray.status(rayjob_must_be_running(k8s, namespace, name, timeouts.long))["rayClusterName"]

    rj.patch(name, {"spec": {"suspend": True}})
    rayjob_must_be_suspended(k8s, namespace, name, timeouts.long)
    assert cluster not in ray_cluster_names(k8s, namespace), \
        f"suspending a running RayJob must delete its RayCluster {cluster}"
    assert not submitter_jobs(k8s, namespace, name), "suspending a running RayJob must delete its submitter Job"
