"""RayJob suspension: a suspended RayJob creates nothing; resuming runs it; suspending a running one tears down."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import describe, ray_clusters, status, submitter_jobs


@pytest.mark.feature("RayJobSuspend")
def test_created_suspended_then_resumed(k8s, namespace, ray_version, timeouts):
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["suspend"] = True
    name = body["metadata"]["name"]
    rj.create(body)
    obj = wait_for(lambda: (status(o := rj.get(name)).get("jobDeploymentStatus") == "Suspended", o), timeouts.medium,
                   "jobDeploymentStatus=Suspended", observe=lambda: describe(rj.get(name)))
    assert not ray_clusters(k8s, namespace), \
        f"a suspended RayJob must not create a RayCluster; found {[c['metadata']['name'] for c in ray_clusters(k8s, namespace)]}"
    assert not submitter_jobs(k8s, namespace, name), "a suspended RayJob must not create a submitter Job"

    rj.patch(name, {"spec": {"suspend": False}})
    obj = wait_for(lambda: (status(o := rj.get(name)).get("jobDeploymentStatus") in ("Complete", "Failed"), o),
                   timeouts.long, "the resumed RayJob to finish", observe=lambda: describe(rj.get(name)))
    assert status(obj).get("jobStatus") == "SUCCEEDED", f"resumed RayJob: {describe(obj)}"


@pytest.mark.feature("RayJobSuspend")
def test_suspending_running_job_tears_down_cluster(k8s, namespace, ray_version, timeouts):
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-basic", ray_version)
    body["spec"]["entrypoint"] = "python -c \"import time; [time.sleep(1) for _ in range(600)]\""
    name = body["metadata"]["name"]
    rj.create(body)
    obj = wait_for(lambda: (status(o := rj.get(name)).get("jobStatus") == "RUNNING", o), timeouts.long,
                   "jobStatus=RUNNING", observe=lambda: describe(rj.get(name)))
    cluster = status(obj)["rayClusterName"]

    rj.patch(name, {"spec": {"suspend": True}})
    obj = wait_for(lambda: (status(o := rj.get(name)).get("jobDeploymentStatus") == "Suspended", o), timeouts.long,
                   "jobDeploymentStatus=Suspended", observe=lambda: describe(rj.get(name)))
    assert not any(c["metadata"]["name"] == cluster for c in ray_clusters(k8s, namespace)), \
        f"suspending a running RayJob must delete its RayCluster {cluster}"
    assert not submitter_jobs(k8s, namespace, name), "suspending a running RayJob must delete its submitter Job"
