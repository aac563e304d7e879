"""KubeRay's light-weight RayJob submitter: the submitter image built with the operator (`/submitter`, its args the
job's runtime env and, after `--`, its entrypoint) as a RayJob's submitterPodTemplate. It submits the job with its
runtime env and follows the job's log to the end; a submission it cannot make fails its Pod, each failure counted
against submitterConfig.backoffLimit; a new submitter Pod follows a job already submitted instead of submitting it
again."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob

SAMPLE = "rayjob-lightweight-submitter"
COUNTS = [f"test_counter got {n}" for n in range(1, 6)]  # the sample's entrypoint's output, given its runtime env
ALREADY_SUBMITTED = "has already been submitted"  # what the submitter logs when it finds its job submitted


def light_submitter_job(ctx, image: str, name: str) -> dict:
    """The sample's RayJob named `name`, its submitter container running `image`; its ConfigMap is created."""
    ctx.create([ctx.sample(SAMPLE, "ConfigMap")])
    body = ctx.sample(SAMPLE, "RayJob")
    body["metadata"]["name"] = name
    body["spec"]["submitterPodTemplate"]["spec"]["containers"][0]["image"] = image
    return body


@pytest.mark.feature("RayJobLightweightSubmitter")
@pytest.mark.samples("rayjob-lightweight-submitter")
def test_lightweight_submitter_runs_job_and_logs_its_output(ctx, submitter_image):
    """A RayJob whose submitter Pod runs the operator's light-weight submitter (`/submitter`, the runtime env in
    --runtime-env-json, the entrypoint after `--`) ends SUCCEEDED/Complete: the submitter submitted the entrypoint
    with that runtime env (the entrypoint fails without it), and its Pod's log shows the job's whole output."""
    job = ctx.create_rayjob(light_submitter_job(ctx, submitter_image, "light-submitter"))

    # step 1: the job succeeds, run with the runtime env the submitter was given
    job.must_succeed(when="submitted by the light-weight submitter with --runtime-env-json")

    # step 2: the submitter followed the job's log to its end
    pods = job.submitter_pods()
    assert pods, f"expected a submitter Pod of RayJob {job.name}; observed none ({describe_rayjob(job.get())})"
    job.submitter_pod_must_log(pods[-1].metadata.name, COUNTS)


@pytest.mark.feature("RayJobLightweightSubmitter", "RayJobSubmissionFailure")
@pytest.mark.samples("rayjob-lightweight-submitter")
def test_lightweight_submitter_failure_ends_submission_failed(ctx, submitter_image):
    """A RayJob whose light-weight submitter cannot submit (its --entrypoint-resources is not a map of resource
    quantities) ends Failed with reason SubmissionFailed and no Ray job status: each submitter Pod failed, and its
    Job ran submitterConfig.backoffLimit (2) + 1 of them before giving up."""
    body = light_submitter_job(ctx, submitter_image, "light-submitter-fails")
    container = body["spec"]["submitterPodTemplate"]["spec"]["containers"][0]
    container["args"] = ["--entrypoint-resources", '{"CPU": "not a quantity"}', "--", *container["args"][3:]]
    body["spec"]["submitterConfig"] = {"backoffLimit": 2}
    job = ctx.create_rayjob(body)

    # step 1: the RayJob ends with the submission's failure
    obj = job.must_finish(deployment_status="Failed", reason="SubmissionFailed",
                          when="when its light-weight submitter cannot submit")
    assert not ray.status(obj).get("jobStatus"), \
        f"no Ray job ran, so jobStatus must stay empty; observed {describe_rayjob(obj)}"

    # step 2: every submitter Pod failed, backoffLimit + 1 of them
    pods = [(p.metadata.name, p.status.phase) for p in job.submitter_pods()]
    assert len(pods) == 3 and all(phase == "Failed" for _, phase in pods), \
        f"expected 3 failed submitter Pods (submitterConfig.backoffLimit 2 + 1); observed {pods}"


@pytest.mark.feature("RayJobLightweightSubmitter")
@pytest.mark.samples("rayjob-lightweight-submitter")
def test_new_lightweight_submitter_follows_submitted_job(ctx, submitter_image):
    """When the light-weight submitter's Pod is deleted while the job it submitted runs, the Job's new submitter
    Pod finds the job already submitted and follows it instead of submitting it again: its log says so and shows
    the job's whole output, the RayJob ends SUCCEEDED/Complete with the same job id, and Ray ran the job once."""
    body = light_submitter_job(ctx, submitter_image, "light-submitter-replaced")
    body["spec"]["shutdownAfterJobFinishes"] = False  # keep the cluster to read Ray's job list at the end
    job = ctx.create_rayjob(body)

    # step 1: the first submitter follows the running job
    first = job.submitter_must_stream_output(COUNTS[0])
    job_id = job.status()["jobId"]

    # step 2: its Pod is deleted; the Job starts another
    ctx.core.delete_namespaced_pod(first.metadata.name, ctx.namespace)
    new = job.new_submitter_must_start(first)[0]

    # step 3: the job succeeds as the one submission
    obj = job.must_succeed(when="after its first submitter Pod was deleted mid-job")
    assert ray.status(obj).get("jobId") == job_id, \
        f"expected the job id to stay {job_id}; observed {describe_rayjob(obj)}"
    runs = [(j.get("submission_id"), j.get("status")) for j in job.ray_jobs()
            if "counter.py" in (j.get("entrypoint") or "")]
    assert runs == [(job_id, "SUCCEEDED")], \
        f"expected Ray to have run the job once, as submission {job_id}; Ray's job list shows {runs}"

    # step 4: the new submitter followed the submitted job to its end
    job.submitter_pod_must_log(new.metadata.name, [ALREADY_SUBMITTED, *COUNTS])
