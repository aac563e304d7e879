"""A SidecarMode RayJob whose submitter container dies while its job runs (KubeRay's alpha gate
SidecarSubmitterRestart): the container is restarted in the same head Pod and follows the running job again
without submitting it a second time, and the RayJob succeeds; a submitter that keeps dying is restarted only a
bounded number of times, after which the RayJob ends Failed/SubmissionFailed."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob, is_finished
from rayconformance.testing.waiting import wait_until

MAX_KILLS = 4  # how often the bounded-restarts test kills the submitter at most


def ticking(seconds: int) -> str:
    """An entrypoint printing a tick a second for `seconds`; a second submission of it would be a second job in
    Ray's job list."""
    return (f"python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range({seconds})]; "
            f"print('entrypoint done')\"")


def submitter_container(job, head) -> str:
    """The container the operator added to the head Pod: the one the RayJob's own head template does not have."""
    __tracebackhide__ = True
    template = job.get()["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    own = {c["name"] for c in template["spec"]["containers"]}
    added = [c.name for c in head.spec.containers if c.name not in own]
    assert len(added) == 1, (f"expected one submitter container beside the RayJob's own containers {sorted(own)} in "
                             f"head Pod {head.metadata.name} (SidecarMode); observed {added}")
    return added[0]


def container_status(pod, name: str):
    return next((s for s in pod.status.container_statuses or [] if s.name == name), None)


def describe_container(pod, name: str) -> str:
    s = container_status(pod, name)
    if s is None:
        return f"head Pod {pod.metadata.name} reports no status for container {name}"
    ended = s.last_state.terminated if s.last_state else None
    state = s.state.to_dict() if s.state else {}
    now = next((k for k, v in state.items() if v), "unknown")
    return (f"container {name} of head Pod {pod.metadata.name} (uid {pod.metadata.uid}): {now}, "
            f"restartCount={s.restart_count}, lastState="
            f"{f'terminated with exit code {ended.exit_code}' if ended else 'none'}")


def running_sidecar_job(ctx, name: str, seconds: int):
    """A SidecarMode RayJob `name` ticking for `seconds`, once its submitter follows the job; (its handle, the
    head Pod, the submitter container's name, the job id)."""
    body = ctx.sample("rayjob-sidecar")
    body["metadata"]["name"] = name
    body["spec"]["entrypoint"] = ticking(seconds)
    job = ctx.create_rayjob(body)
    cluster = job.must_create_its_cluster()
    job.must_be_running()
    head = cluster.head_pod()
    container = submitter_container(job, head)
    wait_until(lambda: ctx.core.read_namespaced_pod_log(head.metadata.name, ctx.namespace, container=container),
               lambda log: "tick 3" in log, f"submitter container {container} of RayJob {name} to follow its job "
               f"(the job's 4th tick in its log)", ctx.timeouts.pods, render=lambda log: log[-600:])
    return job, head, container, ray.status(job.get())["jobId"]


def submitter_must_be_restarted(ctx, job, head, container: str, times: int = 1, unless_finished: bool = False):
    """The submitter container of `head` runs again after it died: the same head Pod, restartCount >= `times`
    (or, `unless_finished`, the RayJob has finished meanwhile)."""
    __tracebackhide__ = True

    def get():
        return ctx.core.read_namespaced_pod(head.metadata.name, ctx.namespace), job.get()

    def restarted(seen) -> bool:
        pod, obj = seen
        if unless_finished and is_finished(obj):
            return True
        s = container_status(pod, container)
        return pod.metadata.uid == head.metadata.uid and s.restart_count >= times and s.state.running is not None

    return wait_until(get, restarted, f"submitter container {container} of RayJob {job.name}, killed while its job "
                      f"ran, to run again in the same head Pod {head.metadata.name} (restartCount >= {times})",
                      ctx.timeouts.pods, render=lambda seen: f"{describe_container(seen[0], container)}; "
                                                             f"RayJob {describe_rayjob(seen[1])}")


@pytest.mark.feature("RayJobSidecarSubmitterRestart")
@pytest.mark.samples("rayjob-sidecar")
def test_killed_submitter_container_restarts_and_follows_the_same_job(ctx):
    """In SidecarMode, a submitter container that dies while the job runs (killed, exit code 137) is restarted in
    the same head Pod, checks Ray for the job it submitted and follows it again instead of submitting it twice:
    the RayJob stays Running on the same RayCluster with the same job id and ends Complete/SUCCEEDED, Ray ran the
    entrypoint once, and the restarted container's log follows the job to its end."""
    if not ctx.provider.supports("kill_container"):
        pytest.skip(f"provider {ctx.provider.name} cannot kill a container of a running Pod")
    job, head, container, job_id = running_sidecar_job(ctx, "sidecar-restart", 45)
    cluster = ray.status(job.get())["rayClusterName"]

    with ctx.watch("RayJob", job.name) as versions:
        ctx.provider.kill_container(head, container)
        pod, _ = submitter_must_be_restarted(ctx, job, head, container)
        ended = container_status(pod, container).last_state.terminated
        assert ended is not None and ended.exit_code != 0, \
            f"the killed submitter container must have ended with a non-zero exit code; observed " \
            f"{describe_container(pod, container)}"
        obj = job.must_succeed(when="after its submitter container was killed and restarted (SidecarMode)")
        astray = versions.first(lambda v: ray.status(v.obj).get("jobDeploymentStatus") in ("Failed", "Retrying")
                                or ray.status(v.obj).get("jobId") not in (None, job_id)
                                or ray.status(v.obj).get("rayClusterName") not in (None, cluster), within=0)
    assert astray is None, (f"RayJob {job.name} must stay Running on RayCluster {cluster} with job id {job_id} while "
                            f"its submitter restarts; {astray.t:.0f}s after the kill observed "
                            f"{describe_rayjob(astray.obj)}")
    assert ray.status(obj).get("jobId") == job_id, \
        f"the job id changed from {job_id} to {ray.status(obj).get('jobId')}"

    runs = [j for j in job.ray_jobs() if "entrypoint done" in (j.get("entrypoint") or "")]
    assert [j.get("submission_id") for j in runs] == [job_id], \
        (f"the restarted submitter must follow submission {job_id}, not submit the entrypoint again; Ray's job list "
         f"shows {[(j.get('submission_id'), j.get('status')) for j in runs]}")
    log = ctx.core.read_namespaced_pod_log(head.metadata.name, ctx.namespace, container=container)
    assert "entrypoint done" in log, \
        f"the restarted submitter container {container} did not follow the job to its end; its log:\n{log[-1500:]}"


@pytest.mark.feature("RayJobSidecarSubmitterRestart")
@pytest.mark.samples("rayjob-sidecar")
def test_submitter_that_keeps_dying_fails_the_job(ctx):
    """In SidecarMode, a submitter container that dies again and again while the job runs is restarted, but not for
    ever: after a bounded number of restarts the RayJob ends Failed/SubmissionFailed instead of staying Running
    with a submitter that cannot follow its job. KubeRay v1.7.0 allows 2 restarts (its default submitter
    backoffLimit; `submitterConfig`, which its API reference says sets that cap, is refused in SidecarMode by its
    validation); the test kills the container up to 4 times."""
    if not ctx.provider.supports("kill_container"):
        pytest.skip(f"provider {ctx.provider.name} cannot kill a container of a running Pod")
    job, head, container, _ = running_sidecar_job(ctx, "sidecar-restart-limit", 600)

    kills = 0
    while kills < MAX_KILLS and not is_finished(job.get()):
        ctx.provider.kill_container(ctx.core.read_namespaced_pod(head.metadata.name, ctx.namespace), container)
        kills += 1
        submitter_must_be_restarted(ctx, job, head, container, times=kills, unless_finished=kills > 1)
    job.must_finish(deployment_status="Failed", reason="SubmissionFailed",
                    when=f"once its submitter container, killed {kills} times while the job ran, was restarted "
                         f"(at most {MAX_KILLS} kills)", timeout=ctx.timeouts.state)
