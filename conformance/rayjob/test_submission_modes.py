"""RayJob submission modes other than a submitter Job: the operator submitting through Ray's Jobs API
(HTTPMode), a submitter container beside the Ray head (SidecarMode), the user submitting (InteractiveMode), and
a job run on an existing RayCluster (clusterSelector)."""
from __future__ import annotations

import time
import uuid

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned
from rayconformance.fixtures.expect.rayjob import (describe_rayjob, ray_must_report_job, rayjob_cluster_must_remain,
                                                   rayjob_must_succeed, rayjob_must_wait_for_job_id)
from rayconformance.fixtures.waiting import wait_until

from .helpers import submitter_jobs

OUTPUT = "rayconformance says 42"  # what the samples' entrypoint prints


def head_service(k8s, namespace: str, rayjob: dict) -> str:
    """The head Service of the RayJob's RayCluster, as the RayCluster reports it."""
    cluster = ray.RayResources(k8s, namespace, "RayCluster").get(ray.status(rayjob)["rayClusterName"])
    return ray.status(cluster)["head"]["serviceName"]


def no_jobs_in(k8s, namespace: str) -> list[str]:
    return [j.metadata.name for j in client.BatchV1Api(k8s).list_namespaced_job(namespace).items]


@pytest.mark.feature("RayJobHTTPMode")
def test_http_mode_runs_without_submitter_job(k8s, namespace, ray_version, timeouts):
    """A RayJob with submissionMode HTTPMode is submitted by the operator through Ray's Jobs API: it succeeds
    without any submitter Job, and Ray reports the job, under the RayJob's job id, SUCCEEDED with the
    entrypoint's output."""
    body = ray.sample("rayjob-http-mode", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the job succeeds
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long, when="in HTTPMode")

    # step 2: no submitter Job was created
    jobs = no_jobs_in(k8s, namespace)
    assert not jobs, f"expected no Kubernetes Job in HTTPMode (the operator submits); observed Jobs {jobs}"

    # step 3: Ray ran it under the RayJob's job id
    job_id = ray.status(obj).get("jobId")
    assert job_id, f"status.jobId not set: {describe_rayjob(obj)}"
    logs = ray_must_report_job(k8s, namespace, head_service(k8s, namespace, obj), job_id, "SUCCEEDED",
                               timeouts.short)
    assert OUTPUT in logs, f"the entrypoint's output is missing from Ray's log of job {job_id}:\n{logs[-1500:]}"


@pytest.mark.feature("RayJobSidecarMode")
def test_sidecar_mode_submits_beside_the_head(k8s, namespace, ray_version, timeouts):
    """A RayJob with submissionMode SidecarMode is submitted from a container the operator adds to the Ray head
    Pod: the job succeeds without any submitter Job, that container's log shows the entrypoint's output, and
    Ray reports the job, under the RayJob's job id, SUCCEEDED."""
    body = ray.sample("rayjob-sidecar", ray_version)
    name = body["metadata"]["name"]
    own = {c["name"] for c in body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]}
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the job succeeds
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long, when="in SidecarMode")

    # step 2: no submitter Job was created
    jobs = no_jobs_in(k8s, namespace)
    assert not jobs, f"expected no Kubernetes Job in SidecarMode (a sidecar of the head submits); observed Jobs {jobs}"

    # step 3: the head Pod carries the submitter beside the Ray head container, and it ran the entrypoint
    cluster = ray.status(obj)["rayClusterName"]
    heads = ray.cluster_pods(k8s, namespace, cluster, "head")
    assert len(heads) == 1, \
        f"expected one head Pod in RayCluster {cluster}; observed {[p.metadata.name for p in heads]}"
    head = heads[0]
    added = [c.name for c in head.spec.containers if c.name not in own]
    assert added, (f"expected a submitter container beside the Ray head in head Pod {head.metadata.name}; observed "
                   f"only the RayJob's own containers {[c.name for c in head.spec.containers]}")
    core = client.CoreV1Api(k8s)
    logs = "".join(core.read_namespaced_pod_log(head.metadata.name, namespace, container=c) for c in added)
    assert OUTPUT in logs, \
        f"the entrypoint's output is missing from the log of the head Pod's container(s) {added}:\n{logs[-1500:]}"

    # step 4: Ray ran it under the RayJob's job id
    job_id = ray.status(obj).get("jobId")
    assert job_id, f"status.jobId not set: {describe_rayjob(obj)}"
    ray_must_report_job(k8s, namespace, head_service(k8s, namespace, obj), job_id, "SUCCEEDED", timeouts.short)


@pytest.mark.feature("RayJobInteractiveMode")
def test_interactive_mode_waits_for_job_id(k8s, namespace, ray_version, timeouts):
    """A RayJob in InteractiveMode brings its RayCluster up and waits (jobDeploymentStatus Waiting) without
    submitting anything; once the user submits a Ray job and sets spec.jobId to its id, the RayJob follows that
    job to SUCCEEDED/Complete."""
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-interactive", ray_version)
    name = body["metadata"]["name"]
    rj.create(body)

    # step 1: the RayJob waits for a job id, and submitted nothing
    obj = rayjob_must_wait_for_job_id(k8s, namespace, name, timeouts.long)
    jobs = no_jobs_in(k8s, namespace)
    assert not jobs, f"expected no Kubernetes Job in InteractiveMode; observed Jobs {jobs}"

    # step 2: the user submits the job to Ray and names it in spec.jobId
    svc = head_service(k8s, namespace, obj)
    job_id = f"interactive-{uuid.uuid4().hex[:8]}"
    wait_until(lambda: ray.submit_job(k8s, namespace, svc, body["spec"]["entrypoint"], job_id),
               lambda answer: answer[0] == 200, f"Ray's Jobs API (through {svc}) to accept job {job_id}",
               timeouts.medium)
    rj.patch(name, {"spec": {"jobId": job_id}})

    # step 3: the RayJob follows the user's job to its end
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long, when=f"once spec.jobId={job_id} was set")
    assert ray.status(obj).get("jobId") == job_id, \
        f"expected status.jobId={job_id} (the user's job); observed {ray.status(obj).get('jobId')!r}"


@pytest.mark.feature("RayJobClusterSelector")
def test_cluster_selector_runs_on_existing_cluster(k8s, namespace, ray_version, timeouts):
    """A RayJob whose clusterSelector names an existing RayCluster runs there (it creates no RayCluster of its
    own) and succeeds; that RayCluster is not the RayJob's, so it is kept afterwards even with
    shutdownAfterJobFinishes."""
    cluster_body = ray.sample("raycluster-basic", ray_version)
    cluster_body["spec"].pop("workerGroupSpecs", None)  # the head is enough for the job
    cluster = cluster_body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayCluster").create(cluster_body)
    raycluster_must_be_provisioned(k8s, namespace, cluster, timeouts.long)

    body = ray.sample("rayjob-cluster-selector", ray_version)
    name = body["metadata"]["name"]
    assert body["spec"]["clusterSelector"]["ray.io/cluster"] == cluster, "the sample must select RayCluster basic"
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    # step 1: the job runs on the selected RayCluster and succeeds
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long, when=f"on RayCluster {cluster}")
    assert ray.status(obj).get("rayClusterName") == cluster, \
        (f"expected RayJob {name} to run on RayCluster {cluster} (its clusterSelector); observed "
         f"{describe_rayjob(obj)}")
    others = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()
              if c["metadata"]["name"] != cluster]
    assert not others, f"a RayJob with a clusterSelector must create no RayCluster; observed {others}"

    # step 2: the selected RayCluster is kept, and Ray there ran the job
    rayjob_cluster_must_remain(k8s, namespace, cluster, time.time() + 15,
                               why="after a RayJob that selected it by clusterSelector finished")
    logs = ray_must_report_job(k8s, namespace, head_service(k8s, namespace, obj), ray.status(obj)["jobId"],
                               "SUCCEEDED", timeouts.short)
    assert OUTPUT in logs, f"the entrypoint's output is missing from Ray's log of the job:\n{logs[-1500:]}"
