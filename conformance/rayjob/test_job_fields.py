"""RayJob fields beside the entrypoint: the job metadata Ray reports, the head's environment reaching the
entrypoint, the submitter Pod made from the user's submitterPodTemplate (or KubeRay's default one), and the legacy
onFailure deletion policy applied to a failed job."""
from __future__ import annotations

import time

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import rayjob_submitter_must_complete
from rayconformance.testing.expect.rayjob_fields import (default_submitter_must_be_used, ray_must_report_job_metadata,
                                                          submitter_pod_must_follow_template)

from rayconformance.testing.axes import in_mode, submission_modes

METADATA = {"team": "rayconformance", "purpose": "field-coverage"}
HEAD_NOTE = ("RAYCONFORMANCE_HEAD_NOTE", "set-in-rayClusterSpec")
# prints the head container's variable: the entrypoint runs on the head, under its Ray processes' environment
PRINT_HEAD_NOTE = f"python -c \"import os; print('head note', os.environ.get('{HEAD_NOTE[0]}'))\""
# How long a test watches what a deletion policy must leave in place.
KEPT_WINDOW_S = 20


@pytest.mark.feature("RayJobMetadata")
@pytest.mark.parametrize("mode", submission_modes("K8sJobMode", "HTTPMode"))
@pytest.mark.samples("rayjob-basic")
def test_job_metadata_and_head_env_reach_ray(ctx, mode):
    """A RayJob's spec.metadata is the metadata of the Ray job it submits, whether a submitter Job submits it
    (K8sJobMode) or the operator does (HTTPMode): Ray's Jobs API reports each key at its value. The entrypoint runs
    with the environment the rayClusterSpec gives the head container. In K8sJobMode without a submitterPodTemplate,
    the submitter is KubeRay's default container: the head's image, 500m/200Mi requested, 1 CPU/1Gi at most."""
    body = in_mode(ctx.sample("rayjob-basic"), mode)
    body["metadata"]["name"] = f"metadata-{mode.lower()}"
    spec = body["spec"]
    spec.update(metadata=METADATA, shutdownAfterJobFinishes=False, entrypoint=PRINT_HEAD_NOTE)
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": HEAD_NOTE[0], "value": HEAD_NOTE[1]}]
    job = ctx.create_rayjob(body)

    # step 1: the job runs to its end
    job.must_create_its_cluster()
    job_id = ray.status(job.must_succeed(when=f"in {mode}"))["jobId"]

    # step 2: Ray holds the RayJob's metadata for the job, and the entrypoint saw the head's variable
    ray_must_report_job_metadata(ctx.k8s, ctx.namespace, job.head_service(), job_id, METADATA, ctx.timeouts.pods)
    logs = ray.job_logs(ctx.k8s, ctx.namespace, job.head_service(), job_id)
    assert f"head note {HEAD_NOTE[1]}" in logs, \
        (f"expected the entrypoint of RayJob {job.name} to see {HEAD_NOTE[0]}={HEAD_NOTE[1]} set on the head container "
         f"in rayClusterSpec; observed job logs {logs[-300:]!r}")
    ctx.covers("RayJob:spec.rayClusterSpec.headGroupSpec.template.spec.containers[].env")

    # step 3: K8sJobMode without a template: KubeRay's default submitter container
    if mode == "K8sJobMode":
        pods = job.submitter_pods()
        assert pods, f"expected a submitter Pod for RayJob {job.name} in K8sJobMode; observed none"
        default_submitter_must_be_used(pods[0], head["image"])


def submitter_template(image: str) -> dict:
    """A submitterPodTemplate whose container leaves the command to the operator and gives its own env, resources,
    port, probes and a postStart hook (which writes the env variable it sees to the Pod's /tmp; a failing hook
    would stop the container)."""
    note = "$RAYCONFORMANCE_SUBMITTER_NOTE"
    return {"spec": {"restartPolicy": "Never", "containers": [{
        "name": "my-submitter", "image": image,
        "env": [{"name": "RAYCONFORMANCE_SUBMITTER_NOTE", "value": "from-the-template"}],
        "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"cpu": "700m", "memory": "768Mi"}},
        "ports": [{"name": "submitter", "containerPort": 8079}],
        "lifecycle": {"postStart": {"exec": {"command": [
            "sh", "-c", f"echo \"postStart saw {note}\" > /tmp/post-start"]}}},
        "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2},
        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
        "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 10, "failureThreshold": 6}}]}}


@pytest.mark.feature("RayJobSubmitterPodTemplate")
@pytest.mark.samples("rayjob-basic")
def test_submitter_runs_as_the_template_gives_it(ctx):
    """A RayJob's submitterPodTemplate is the submitter Pod's: with no command of its own, its container runs the
    operator's submission command (the job succeeds) with the template's env variable beside the operator's
    RAY_DASHBOARD_ADDRESS, RAY_JOB_SUBMISSION_ID and PYTHONUNBUFFERED, and with the template's resources, port,
    probes and postStart hook."""
    body = ctx.sample("rayjob-basic")
    body["metadata"]["name"] = "own-submitter"
    head_image = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    template = submitter_template(head_image)
    body["spec"]["submitterPodTemplate"] = template
    job = ctx.create_rayjob(body)

    # step 1: the submitter submits the job, which succeeds
    job.must_succeed()
    rayjob_submitter_must_complete(ctx.k8s, ctx.namespace, job.name, ctx.timeouts.pods)

    # step 2: its Pod is the template's, with the operator's variables added
    pods = job.submitter_pods()
    assert pods, f"expected a submitter Pod for RayJob {job.name}; observed none"
    pod = pods[0]
    submitter_pod_must_follow_template(ctx.k8s, ctx.namespace, pod, template)


@pytest.mark.feature("RayJobDeletionRules")
@pytest.mark.samples("rayjob-deletion-rules")
def test_legacy_on_failure_policy_applies_to_a_failed_job(ctx):
    """A RayJob with shutdownAfterJobFinishes and the legacy deletionStrategy onSuccess DeleteCluster / onFailure
    DeleteWorkers whose job FAILED applies onFailure: its worker Pods go, while its RayCluster with its head Pod and
    the RayJob stay."""
    body = ctx.sample("rayjob-deletion-rules")
    body["metadata"]["name"] = "legacy-on-failure"
    spec = body["spec"]
    spec["shutdownAfterJobFinishes"] = True
    spec["deletionStrategy"] = {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteWorkers"}}
    spec["entrypoint"] = "python -c \"import sys; print('rayconformance job fails'); sys.exit(1)\""
    rule = "the legacy onFailure policy DeleteWorkers (the job FAILED)"
    job = ctx.create_rayjob(body)

    # step 1: the job fails
    cluster = job.must_create_its_cluster()
    job.must_finish(job_status="FAILED", deployment_status="Failed", when="its entrypoint exits 1")

    # step 2: the workers go; the RayCluster, its head and the RayJob stay
    cluster.workers_must_be_deleted(after=rule)
    until = time.time() + KEPT_WINDOW_S
    cluster.must_remain(until, why=f"{rule} does not delete the RayCluster (onSuccess DeleteCluster is not for a "
                                   f"failed job)")
    heads = [p.metadata.name for p in cluster.pods("head")]
    assert heads, f"expected {rule} to keep the head Pod of RayCluster {cluster.name}; observed no head Pod"
    job.must_remain(until, why=f"{rule} does not delete the RayJob")
    ctx.covers("RayJob:spec.deletionStrategy.onFailure.policy")
