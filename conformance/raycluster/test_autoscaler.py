"""Autoscaler v1 and v2: Ray demand scales a worker group up within its max, idle workers go, minReplicas is honored."""
from __future__ import annotations

import pytest

# Detached actors needing one CPU each: the head has none, so each needs a worker.
CREATE = """
import ray
ray.init(namespace='rayconformance')

@ray.remote(num_cpus=1)
class Holder:
    def ping(self):
        return 'pong'

hs = [Holder.options(name=f'holder-{{i}}', lifetime='detached').remote() for i in range({n})]
ready, _ = ray.wait([h.ping.remote() for h in hs], num_returns={ready}, timeout=900)
print('PINGS', ray.get(ready))
"""
# What the autoscaler reported to the GCS: only autoscaler v2 reports its state (a version > 0); v1 never does.
V2_STATE = """
import ray
from ray.autoscaler.v2.sdk import get_cluster_status
ray.init()
print('AUTOSCALER_STATE_VERSION', get_cluster_status(ray.get_runtime_context().gcs_address).stats.autoscaler_version)
"""
KILL = """
import ray
ray.init(namespace='rayconformance')
for i in range({n}):
    ray.kill(ray.get_actor(f'holder-{{i}}'))
print('KILLED', {n})
"""


@pytest.mark.parametrize("version", [pytest.param("v1", marks=pytest.mark.feature("RayClusterAutoscalerV1")),
                                     pytest.param("v2", marks=pytest.mark.feature("RayClusterAutoscalerV2"))])
@pytest.mark.samples("raycluster-autoscaler")
def test_demand_scales_workers_up_and_idle_down(ctx, version):
    """With in-tree autoscaling, the head Pod gets an autoscaler sidecar; Ray actors that need more CPUs than the
    cluster has add workers up to the group's maxReplicas and no further (demand for 3 workers, maxReplicas 2:
    never more than 2 worker Pods), workers left idle are removed, and raising minReplicas adds a worker without
    any demand. The autoscaler that runs is the one asked for: with autoscalerOptions.version v2, Ray's autoscaler
    v2 reports its state to the GCS; with v1, nothing does (whatever Ray's own default is)."""
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"]["version"] = version
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    containers = [c.name for c in cluster.head_pod().spec.containers]
    assert "autoscaler" in containers or len(containers) > 1, \
        f"expected an autoscaler sidecar in the head Pod, containers: {containers}"

    with cluster.watch_pods() as pods:
        # demand for 3 CPUs, one worker each, in a group of at most 2
        cluster.ray_job_must_succeed(CREATE.format(n=3, ready=2))
        cluster.workers_must_be_running_and_ready(2, what="the autoscaler to add 2 workers")
        replicas = cluster.get()["spec"]["workerGroupSpecs"][0]["replicas"]
        assert replicas <= 2, f"the autoscaler must stay within maxReplicas=2; spec replicas={replicas}"
        logs = cluster.ray_job_must_succeed(V2_STATE, ctx.timeouts.medium)
        reported = next((line.split()[1] for line in logs.splitlines()
                         if line.startswith("AUTOSCALER_STATE_VERSION ")), None)
        assert reported is not None and reported.isdigit(), \
            f"could not read the autoscaler state version from the GCS; logs: {logs[-500:]}"
        if version == "v2":
            assert int(reported) > 0, \
                ("with autoscalerOptions.version v2, Ray's autoscaler v2 must run and report its state to the GCS "
                 f"(autoscaler state version > 0); observed {reported!r} (v1 never reports one)")
        else:
            assert int(reported) == 0, \
                ("with autoscalerOptions.version v1, Ray's autoscaler v1 must run, which reports no state to the GCS "
                 f"(autoscaler state version 0); observed {reported} (autoscaler v2 runs)")
    pods.must_not_have_failed()
    assert pods.peak <= 2, \
        (f"with demand for 3 workers the group must stay capped at maxReplicas=2 worker Pods; observed {pods.peak} "
         f"at once: {pods.summary()}")

    cluster.ray_job_must_succeed(KILL.format(n=3), ctx.timeouts.medium)  # demand gone
    cluster.workers_must_be_running_and_ready(0, what="idle workers to be removed after the idle timeout")

    groups = cluster.get()["spec"]["workerGroupSpecs"]
    groups[0]["minReplicas"] = 1
    cluster.patch({"spec": {"workerGroupSpecs": groups}})
    cluster.workers_must_be_running_and_ready(1, what="minReplicas=1 to add one worker")
