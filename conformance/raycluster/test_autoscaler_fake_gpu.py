"""Autoscaler v1 and v2 with a "fake" GPU worker group: a group whose rayStartParams give Ray one GPU (num-gpus)
without any device, so it runs on any node. GPU demand scales it from zero and back, and with no CPU-only group
CPU demand is served by it too. Each case checks, once the autoscaler has acted, that the one running is the version
asked for."""
from __future__ import annotations

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.ray_actors import create_actors, kill_actors, placed



def fake_gpu_cluster(ctx, version: str):
    body = ctx.sample("raycluster-autoscaler-fake-gpu")
    body["spec"]["autoscalerOptions"]["version"] = version
    group = body["spec"]["workerGroupSpecs"][0]
    assert group["rayStartParams"].get("num-gpus") == "1" and "nvidia.com/gpu" not in str(group["template"]), \
        "the sample's group must offer Ray one GPU through rayStartParams only"
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    return cluster, group["groupName"]


def one_worker_must_run_the_actor_and_go_when_idle(ctx, cluster, group: str, resources: str, demand: str, *,
                                                   version: str):
    """An actor asking for `resources` (a Ray options string, `demand` in words) must be placed on exactly one new
    worker Pod of `group`, brought up by the autoscaler `version` asks for, which is removed once the actor is gone;
    returns the actor's placement and that Pod."""
    wait = int(ctx.timeouts.medium)
    with cluster.watch_pods(group=group) as pods:
        # the demand brings up one worker of the group, which runs the actor
        logs = cluster.ray_job_must_succeed(create_actors(["actor"], resources, wait=wait))
        actor = placed(logs)["actor"]
        assert actor is not None, \
            (f"an actor asking for {demand} was not placed within {wait}s of the demand; group {group} "
             f"(rayStartParams num-gpus 1, one CPU, the cluster's only group): {pods.summary()}; "
             f"{cluster.describe_worker_groups()}")
        [worker] = cluster.group_workers_must_be_running_and_ready(
            group, 1, ctx.timeouts.short, what=f"{demand} to bring up one worker of the fake GPU group")
        cluster.autoscaler_must_be(version)

        # without the demand the group goes back to zero
        cluster.ray_job_must_succeed(kill_actors(["actor"]), ctx.timeouts.medium)
        cluster.group_workers_must_be_running_and_ready(group, 0, what="the idle worker to be removed after the "
                                                                       "idle timeout")
    pods.must_not_have_failed()
    assert pods.peak == 1 and len(pods.created) == 1, \
        f"{demand} must bring up exactly one worker Pod; observed {pods.summary()}"
    return actor, worker


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler-fake-gpu")
def test_fake_gpu_group_scales_for_gpu_demand(ctx, version):
    """A worker group at zero that gives Ray one GPU through rayStartParams num-gpus (no device) is scaled by GPU
    demand: an actor asking for one GPU brings up exactly one worker of that group, whose Ray node offers GPU 1 and
    runs the actor with one GPU id; once the actor is gone the group goes back to zero Pods."""
    cluster, group = fake_gpu_cluster(ctx, version)
    actor, worker = one_worker_must_run_the_actor_and_go_when_idle(ctx, cluster, group, "num_cpus=1, num_gpus=1",
                                                                   "one GPU", version=version)
    assert actor["ip"] == worker.status.pod_ip and actor["node_gpus"] == 1 and len(actor["gpu_ids"]) == 1, \
        (f"the num_gpus=1 actor must run on the group's worker {worker.metadata.name} (Pod IP "
         f"{worker.status.pod_ip}), whose Ray node offers GPU 1 (rayStartParams num-gpus), holding one GPU id; "
         f"observed {actor}")


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.samples("raycluster-autoscaler-fake-gpu")
def test_cpu_demand_uses_the_gpu_group_when_no_other_fits(ctx, version):
    """With a GPU worker group (rayStartParams num-gpus 1, one CPU) as the cluster's only worker group, an actor
    that asks for one CPU and no GPU still gets a worker: exactly one Pod of that group comes up and runs it; once
    the actor is gone the idle worker is removed and the group is back at zero."""
    cluster, group = fake_gpu_cluster(ctx, version)
    actor, worker = one_worker_must_run_the_actor_and_go_when_idle(ctx, cluster, group, "num_cpus=1",
                                                                   "one CPU and no GPU", version=version)
    assert actor["ip"] == worker.status.pod_ip and not actor["gpu_ids"], \
        (f"the CPU-only actor must run on the GPU group's worker {worker.metadata.name} (Pod IP "
         f"{worker.status.pod_ip}) holding no GPU; observed {actor}")
