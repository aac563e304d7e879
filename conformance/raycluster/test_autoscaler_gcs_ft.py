"""Autoscaling with GCS fault tolerance: the autoscaler keeps scaling workers up and down after the head Pod is
replaced (the new head's GCS restored from Redis), and the autoscaling cluster's deletion still cleans Redis."""
from __future__ import annotations

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.ray_actors import create_actors, kill_actors, placed


def demand_must_come_and_go(ctx, cluster, name: str, *, when: str) -> None:
    """An actor needing a CPU (the head has none) brings up one worker, which goes once the actor is gone."""
    __tracebackhide__ = True
    wait = int(ctx.timeouts.medium)
    where = placed(cluster.ray_job_must_succeed(create_actors([name], wait=wait))).get(name)
    assert where, \
        (f"{when}, the actor {name} needing a CPU must run on a worker the autoscaler brings up within {wait}s: "
         f"not placed; {cluster.describe_worker_groups()}")
    cluster.workers_must_be_running_and_ready(1, ctx.timeouts.short, what=f"{when}, an actor needing a CPU to have "
                                                                         f"brought up 1 worker")
    cluster.ray_job_must_succeed(kill_actors([name]), ctx.timeouts.medium)
    cluster.workers_must_be_running_and_ready(0, what=f"{when}, the idle worker to be removed once the actor is gone")


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-autoscaler-gcs-ft")
def test_autoscaling_continues_after_head_pod_replaced(ctx, redis, version):
    """With in-tree autoscaling and GCS fault tolerance on Redis, an actor needing a CPU brings up a worker, which
    goes when the actor is gone; after the head Pod is deleted and a new one is Running and Ready (with the
    autoscaler sidecar), the same holds: a new actor brings up a worker again, and it goes again; both times the
    autoscaler that runs is the one asked for. Deleting the cluster then leaves nothing of it in Redis."""
    body = ctx.sample("raycluster-autoscaler-gcs-ft")
    body["spec"]["autoscalerOptions"]["version"] = version
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    # step 1: autoscaling up and down with the first head, by the autoscaler asked for
    demand_must_come_and_go(ctx, cluster, "before", when="with the first head")
    cluster.autoscaler_must_be(version)

    # step 2: the head Pod is deleted; a new one comes up
    old = cluster.head_pod()
    ctx.core.delete_namespaced_pod(old.metadata.name, ctx.namespace)
    cluster.new_head_must_be_ready(old.metadata.uid, ctx.timeouts.long)
    cluster.head_must_run_autoscaler_sidecar(what="the new head Pod")

    # step 3: autoscaling up and down still works with the new head, by the autoscaler asked for
    demand_must_come_and_go(ctx, cluster, "after", when="after the head Pod was replaced")
    cluster.autoscaler_must_be(version)

    # step 4: deleting the cluster cleans its Redis storage, autoscaler or not
    cluster.delete()
    cluster.must_be_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    size = redis.dbsize()
    assert size == 0, f"deleting the autoscaling RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"
