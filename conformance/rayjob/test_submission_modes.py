"""RayJob submission modes other than a submitter Job: the operator submitting through Ray's Jobs API
(HTTPMode), a submitter container beside the Ray head (SidecarMode), the user submitting (InteractiveMode), and
a job run on an existing RayCluster (clusterSelector)."""
from __future__ import annotations

import time
import uuid

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob

OUTPUT = "rayconformance says 42"  # what the samples' entrypoint prints


def job_names(ctx) -> list[str]:
    """The Kubernetes Jobs in the test's namespace."""
    return [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items]


@pytest.mark.feature("RayJobHTTPMode")
@pytest.mark.samples("rayjob-http-mode")
def test_http_mode_runs_without_submitter_job(ctx):
    """A RayJob with submissionMode HTTPMode is submitted by the operator through Ray's Jobs API: it succeeds
    without any submitter Job, and Ray reports the job, under the RayJob's job id, SUCCEEDED with the
    entrypoint's output."""
    job = ctx.create_rayjob("rayjob-http-mode")

    # step 1: the job succeeds
    obj = job.must_succeed(when="in HTTPMode")

    # step 2: no submitter Job was created
    jobs = job_names(ctx)
    assert not jobs, f"expected no Kubernetes Job in HTTPMode (the operator submits); observed Jobs {jobs}"

    # step 3: Ray ran it under the RayJob's job id
    job_id = ray.status(obj).get("jobId")
    assert job_id, f"status.jobId not set: {describe_rayjob(obj)}"
    logs = job.ray_must_report_job(job_id, "SUCCEEDED", ctx.timeouts.short)
    assert OUTPUT in logs, f"the entrypoint's output is missing from Ray's log of job {job_id}:\n{logs[-1500:]}"


@pytest.mark.feature("RayJobSidecarMode")
@pytest.mark.samples("rayjob-sidecar")
def test_sidecar_mode_submits_beside_the_head(ctx):
    """A RayJob with submissionMode SidecarMode is submitted from a container the operator adds to the Ray head
    Pod: the job succeeds without any submitter Job, that container's log shows the entrypoint's output, and
    Ray reports the job, under the RayJob's job id, SUCCEEDED."""
    body = ctx.sample("rayjob-sidecar")
    own = {c["name"] for c in body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]}
    job = ctx.create_rayjob(body)

    # step 1: the job succeeds
    obj = job.must_succeed(when="in SidecarMode")

    # step 2: no submitter Job was created
    jobs = job_names(ctx)
    assert not jobs, f"expected no Kubernetes Job in SidecarMode (a sidecar of the head submits); observed Jobs {jobs}"

    # step 3: the head Pod carries the submitter beside the Ray head container, and it ran the entrypoint
    cluster = job.cluster()
    heads = cluster.pods("head")
    assert len(heads) == 1, \
        f"expected one head Pod in RayCluster {cluster.name}; observed {[p.metadata.name for p in heads]}"
    head = heads[0]
    added = [c.name for c in head.spec.containers if c.name not in own]
    assert added, (f"expected a submitter container beside the Ray head in head Pod {head.metadata.name}; observed "
                   f"only the RayJob's own containers {[c.name for c in head.spec.containers]}")
    logs = "".join(ctx.core.read_namespaced_pod_log(head.metadata.name, ctx.namespace, container=c) for c in added)
    assert OUTPUT in logs, \
        f"the entrypoint's output is missing from the log of the head Pod's container(s) {added}:\n{logs[-1500:]}"

    # step 4: Ray ran it under the RayJob's job id
    job_id = ray.status(obj).get("jobId")
    assert job_id, f"status.jobId not set: {describe_rayjob(obj)}"
    job.ray_must_report_job(job_id, "SUCCEEDED", ctx.timeouts.short)


@pytest.mark.feature("RayJobInteractiveMode")
@pytest.mark.samples("rayjob-interactive")
def test_interactive_mode_waits_for_job_id(ctx):
    """A RayJob in InteractiveMode brings its RayCluster up and waits (jobDeploymentStatus Waiting) without
    submitting anything; once the user submits a Ray job and sets spec.jobId to its id, the RayJob follows that
    job to SUCCEEDED/Complete."""
    body = ctx.sample("rayjob-interactive")
    job = ctx.create_rayjob(body)

    # step 1: the RayJob waits for a job id, and submitted nothing
    job.must_wait_for_job_id()
    jobs = job_names(ctx)
    assert not jobs, f"expected no Kubernetes Job in InteractiveMode; observed Jobs {jobs}"

    # step 2: the user submits the job to Ray and names it in spec.jobId
    job_id = f"interactive-{uuid.uuid4().hex[:8]}"
    job.ray_must_accept_job(body["spec"]["entrypoint"], job_id)
    job.patch({"spec": {"jobId": job_id}})

    # step 3: the RayJob follows the user's job to its end
    obj = job.must_succeed(when=f"once spec.jobId={job_id} was set")
    assert ray.status(obj).get("jobId") == job_id, \
        f"expected status.jobId={job_id} (the user's job); observed {ray.status(obj).get('jobId')!r}"


@pytest.mark.feature("RayJobClusterSelector")
@pytest.mark.samples("raycluster-basic", "rayjob-cluster-selector")
def test_cluster_selector_runs_on_existing_cluster(ctx):
    """A RayJob whose clusterSelector names an existing RayCluster runs there (it creates no RayCluster of its
    own) and succeeds; that RayCluster is not the RayJob's, so it is kept afterwards even with
    shutdownAfterJobFinishes."""
    cluster_body = ctx.sample("raycluster-basic")
    cluster_body["spec"].pop("workerGroupSpecs", None)  # the head is enough for the job
    cluster = ctx.create_raycluster(cluster_body)
    cluster.must_be_provisioned()

    body = ctx.sample("rayjob-cluster-selector")
    assert body["spec"]["clusterSelector"]["ray.io/cluster"] == cluster.name, \
        "the sample must select RayCluster basic"
    job = ctx.create_rayjob(body)

    # step 1: the job runs on the selected RayCluster and succeeds
    obj = job.must_succeed(when=f"on RayCluster {cluster.name}")
    assert ray.status(obj).get("rayClusterName") == cluster.name, \
        (f"expected RayJob {job.name} to run on RayCluster {cluster.name} (its clusterSelector); observed "
         f"{describe_rayjob(obj)}")
    others = [c["metadata"]["name"] for c in ctx.resources("RayCluster").list()
              if c["metadata"]["name"] != cluster.name]
    assert not others, f"a RayJob with a clusterSelector must create no RayCluster; observed {others}"

    # step 2: the selected RayCluster is kept, and Ray there ran the job
    cluster.must_remain(time.time() + 15, why="after a RayJob that selected it by clusterSelector finished")
    logs = job.ray_must_report_job(ray.status(obj)["jobId"], "SUCCEEDED", ctx.timeouts.short)
    assert OUTPUT in logs, f"the entrypoint's output is missing from Ray's log of the job:\n{logs[-1500:]}"
