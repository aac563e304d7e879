"""Autoscaler v1 and v2: Ray demand (actors, or a request through the autoscaler SDK) scales a worker group up within
its max, idle workers go, minReplicas is honored.
Each case checks, once the autoscaler has acted, that the one running is the version asked for."""
from __future__ import annotations

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.expect.raycluster_pods import worker_must_go_while_other_stays
from rayconformance.testing.programs import program
from rayconformance.testing.ray_actors import ask_actors, create_actors, kill_actors, placed

# Detached actors needing one CPU each: the head has none, so each needs a worker.
HOLDERS = ["holder-0", "holder-1", "holder-2"]


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler")
def test_demand_scales_workers_up_and_idle_down(ctx, version):
    """With in-tree autoscaling, the head Pod gets an autoscaler sidecar; Ray actors that need more CPUs than the
    cluster has add workers up to the group's maxReplicas and no further (demand for 3 workers, maxReplicas 2:
    never more than 2 worker Pods), and workers left idle are removed. A request through Ray's autoscaler SDK
    (`request_resources`, one 1-CPU bundle) brings up a worker with no task to run, which goes once the request is
    cleared. Raising minReplicas adds a worker without any demand, and demand then still takes the group above that
    new minimum. The autoscaler that runs is the one asked for: with autoscalerOptions.version v2, Ray's autoscaler
    v2 reports its state to the GCS; with v1, nothing does (whatever Ray's own default is)."""
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"]["version"] = version
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    cluster.head_must_run_autoscaler_sidecar(what="the head Pod")

    with cluster.watch_pods() as pods:
        # demand for 3 CPUs, one worker each, in a group of at most 2
        cluster.ray_job_must_succeed(create_actors(HOLDERS, wait=900, ready=2))
        cluster.workers_must_be_running_and_ready(2, what="the autoscaler to add 2 workers")
        replicas = cluster.get()["spec"]["workerGroupSpecs"][0]["replicas"]
        assert replicas <= 2, f"the autoscaler must stay within maxReplicas=2; spec replicas={replicas}"
        cluster.autoscaler_must_be(version)
    pods.must_not_have_failed()
    assert pods.peak <= 2, \
        (f"with demand for 3 workers the group must stay capped at maxReplicas=2 worker Pods; observed {pods.peak} "
         f"at once: {pods.summary()}")

    cluster.ray_job_must_succeed(kill_actors(HOLDERS), ctx.timeouts.medium)  # demand gone
    cluster.workers_must_be_running_and_ready(0, what="idle workers to be removed after the idle timeout")

    # a request through the autoscaler SDK (request_resources) for one 1-CPU bundle brings up a worker with no task to
    # run, and it stays while requested; the request cleared, it is idle and goes
    cluster.ray_job_must_succeed(program("request_resources", n=1), ctx.timeouts.medium)
    cluster.workers_must_be_running_and_ready(1, what="request_resources for one 1-CPU bundle to bring up 1 worker")
    cluster.ray_job_must_succeed(program("request_resources", n=0), ctx.timeouts.medium)
    cluster.workers_must_be_running_and_ready(0, what="the worker of the cleared request to be removed as idle")

    groups = cluster.get()["spec"]["workerGroupSpecs"]
    groups[0]["minReplicas"] = 1
    cluster.patch({"spec": {"workerGroupSpecs": groups}})
    cluster.workers_must_be_running_and_ready(1, what="minReplicas=1 to add one worker")

    # demand still takes the group above its new minimum: 2 actors, one on the minReplicas worker, one on a new one
    # (only created: the job does not wait for them, so a group held at its minimum fails on the workers below)
    cluster.ray_job_must_succeed(create_actors(HOLDERS[:2]))
    cluster.workers_must_be_running_and_ready(
        2, what="demand for 2 workers to take the group above its raised minReplicas=1")
    replicas = cluster.get()["spec"]["workerGroupSpecs"][0]["replicas"]
    assert replicas == 2, \
        (f"with minReplicas=1 and demand for 2 workers the autoscaler must set the group's replicas to 2; observed "
         f"replicas={replicas}; {cluster.describe_worker_groups()}")


def actor_worker(cluster, name: str, logs: str):
    """The worker Pod whose IP the job's logs give for actor `name` (where it runs)."""
    where = placed(logs).get(name) or {}
    pods = [p for p in cluster.pods("worker") if p.status.pod_ip == where.get("ip")]
    assert pods, \
        (f"actor {name} must run on a worker Pod; it runs at {where.get('ip')!r} (None: not placed); "
         f"{cluster.describe_worker_groups()}")
    return pods[0]


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler")
def test_workers_follow_actors_one_at_a_time(ctx, version):
    """Actors that come one at a time each add a worker (0, 1, 2 workers), and actors that go one at a time each
    take one away (2, 1, 0): when the first actor goes, its idle worker is removed while the worker still running
    the second actor is kept (never deleted, the actor still answering on it), and once the second goes too, the
    group is back at zero."""
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"]["version"] = version
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    wait = int(ctx.timeouts.medium)

    # step 1: the first actor brings up one worker, the second a second one
    first = actor_worker(cluster, "holder-0",
                         cluster.ray_job_must_succeed(create_actors(["holder-0"], wait=wait)))
    cluster.workers_must_be_running_and_ready(1, what="one actor needing a CPU to bring up 1 worker")
    cluster.autoscaler_must_be(version)
    busy = actor_worker(cluster, "holder-1",
                        cluster.ray_job_must_succeed(create_actors(["holder-1"], wait=wait)))
    cluster.workers_must_be_running_and_ready(2, what="a second actor needing a CPU to bring up a second worker")
    assert busy.metadata.uid != first.metadata.uid, \
        f"each 1-CPU actor must have a 1-CPU worker of its own; both run on {busy.metadata.name}"

    # step 2: the first actor goes: its worker is removed, the one running the second actor stays
    with cluster.watch_pods() as pods:
        cluster.ray_job_must_succeed(kill_actors(["holder-0"]), ctx.timeouts.medium)
        worker_must_go_while_other_stays(
            ctx.k8s, ctx.namespace, cluster.name, first, busy, pods, ctx.timeouts.upgrade,
            what="the autoscaler to remove holder-0's idle worker and keep the worker running holder-1")
    pods.must_not_have_failed()
    cluster.worker_pods_must_be([busy.metadata.name], ctx.timeouts.medium,
                                what="the worker running holder-1 to be the group's only one")
    still = actor_worker(cluster, "holder-1", cluster.ray_job_must_succeed(ask_actors(["holder-1"], 60),
                                                                           ctx.timeouts.medium))
    assert still.metadata.uid == busy.metadata.uid, \
        f"actor holder-1 must still run on {busy.metadata.name}; it runs on {still.metadata.name}"

    # step 3: the second actor goes: the group is back at zero
    cluster.ray_job_must_succeed(kill_actors(["holder-1"]), ctx.timeouts.medium)
    cluster.workers_must_be_running_and_ready(0, what="the last idle worker to be removed")
