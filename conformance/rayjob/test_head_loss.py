"""A RayJob's head Pod lost while its job runs: where the submitter runs outside the head (K8sJobMode) the RayCluster
gets a new head and the RayJob still ends, Failed; where the submitter runs inside the head (SidecarMode) nothing
could resubmit, so no new head is made and the RayJob ends Failed at once."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob

LONG_JOB = "python -c \"import time; print('rayconformance job running', flush=True); time.sleep(900)\""
# How long a test watches for a head Pod that must not be made (KubeRay's e2e watches its short timeout).
NO_HEAD_WINDOW_S = 30


def running_job(ctx, sample: str, name: str, **spec):
    """The RayJob of `sample`, renamed `name` (and `spec` set in its spec), running a 15-minute job; (its handle, its
    cluster's, the head Pod)."""
    body = ctx.sample(sample)
    body["metadata"]["name"] = name
    body["spec"]["entrypoint"] = LONG_JOB
    body["spec"].update(spec)
    if body["spec"].get("submissionMode", "K8sJobMode") == "K8sJobMode":
        body["spec"]["submitterConfig"] = {"backoffLimit": 0}  # no second submitter resubmitting to the new head
    job = ctx.create_rayjob(body)
    cluster = job.must_create_its_cluster()
    job.must_be_running()
    return job, cluster, cluster.head_pod()


@pytest.mark.feature("RayJobHeadPodLoss")
@pytest.mark.samples("rayjob-basic")
def test_k8sjob_mode_head_loss_gets_a_new_head_and_ends_failed(ctx):
    """In K8sJobMode, a head Pod deleted while the job runs is replaced: the RayCluster gets a new head Pod, and
    the RayJob, whose job died with the old head, ends Failed instead of running for ever. (The RayCluster is kept
    after the job ends, shutdownAfterJobFinishes false: the new head comes only once the old Pod is gone, and the
    job can fail before that; a cluster deleted with the finished job would leave no head to show.)"""
    job, cluster, head = running_job(ctx, "rayjob-basic", "head-loss", shutdownAfterJobFinishes=False)

    with ctx.watch_pods(cluster.name, "head", relist=True) as heads:
        ctx.core.delete_namespaced_pod(head.metadata.name, ctx.namespace)
        # a head made while the watch relisted is in the fresh list it recorded, which `first` looks at too
        new = heads.first(lambda v: v.obj["metadata"]["uid"] != head.metadata.uid, ctx.timeouts.pods,
                          gaps_checked=lambda gaps: None)
    heads.must_not_have_failed()
    assert new, (f"after its head Pod {head.metadata.name} was deleted, RayCluster {cluster.name} of a K8sJobMode "
                 f"RayJob must get a new head Pod; observed {heads.summary()}")

    obj = job.must_finish(deployment_status="Failed", when="after its head Pod was lost (K8sJobMode)")
    assert ray.status(obj).get("reason") in ("AppFailed", "SubmissionFailed",
                                             "JobDeploymentStatusTransitionGracePeriodExceeded"), \
        f"a RayJob whose job died with its head reports why it failed; observed {describe_rayjob(obj)}"


@pytest.mark.feature("RayJobHeadPodLoss")
@pytest.mark.samples("rayjob-sidecar")
def test_sidecar_mode_head_loss_ends_failed_without_a_new_head(ctx):
    """In SidecarMode the submitter runs inside the head Pod: a head Pod deleted while the job runs is not replaced
    (no head Pod is made for the RayCluster again) and the RayJob ends Failed, saying the job's application or its
    submission failed (AppFailed or SubmissionFailed)."""
    job, cluster, head = running_job(ctx, "rayjob-sidecar", "sidecar-head-loss")

    def new_heads_now(gaps) -> str | None:
        """Where the watch relisted: a head Pod other than the lost one, looked for afresh."""
        others = [p.metadata.name for p in cluster.pods("head") if p.metadata.uid != head.metadata.uid]
        return (f"head Pod(s) {', '.join(others)}, yet a SidecarMode RayJob's lost head Pod must not be replaced"
                if others else None)

    with ctx.watch_pods(cluster.name, "head", relist=True) as heads:
        ctx.core.delete_namespaced_pod(head.metadata.name, ctx.namespace)
        obj = job.must_finish(deployment_status="Failed",
                              when="after its head Pod, where its submitter ran, was lost (SidecarMode)")
        new = heads.first(lambda v: v.obj["metadata"]["uid"] != head.metadata.uid, NO_HEAD_WINDOW_S,
                          gaps_checked=new_heads_now)
    heads.must_not_have_failed()
    # Which of the two depends on what the operator sees first: the head Pod gone (AppFailed, "Ray head pod not
    # found") or the Pod still terminating with its submitter container killed (SubmissionFailed); KubeRay's own
    # e2e (TestRayJobSidecarMode) accepts both.
    assert ray.status(obj).get("reason") in ("AppFailed", "SubmissionFailed"), \
        f"a SidecarMode RayJob whose head Pod was lost must end Failed as AppFailed or SubmissionFailed; " \
        f"observed {describe_rayjob(obj)}"
    assert new is None, (f"a SidecarMode RayJob's lost head Pod {head.metadata.name} must not be replaced; "
                         f"observed a new head Pod {new.name} ({heads.summary()})")
