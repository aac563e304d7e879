"""Autoscaler v1 and v2: Ray demand scales a worker group up within its max, idle workers go, minReplicas is honored."""
from __future__ import annotations


import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import create_provisioned, describe_pods, pods, run_ray_job, running_ready

# Detached actors needing one CPU each: the head has none, so each needs a worker.
CREATE = """
import ray
ray.init(namespace='rayconformance')

@ray.remote(num_cpus=1)
class Holder:
    def ping(self):
        return 'pong'

hs = [Holder.options(name=f'holder-{{i}}', lifetime='detached').remote() for i in range({n})]
print('PINGS', ray.get([h.ping.remote() for h in hs]))
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
def test_demand_scales_workers_up_and_idle_down(k8s, namespace, ray_version, timeouts, version):
    body = ray.sample("raycluster-autoscaler", ray_version)
    body["spec"]["autoscalerOptions"]["version"] = version
    name = body["metadata"]["name"]

    def observe():
        o = rc.get(name) or {}
        g = (o.get("spec") or {}).get("workerGroupSpecs", [{}])[0]
        return (f"replicas={g.get('replicas')}, desiredWorkerReplicas={(o.get('status') or {}).get('desiredWorkerReplicas')}, "
                f"Pods: {describe_pods(pods(k8s, namespace, name))}")

    rc, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    svc = obj["status"]["head"]["serviceName"]
    heads = pods(k8s, namespace, name, "head")
    assert any(c.name == "autoscaler" for c in heads[0].spec.containers) or len(heads[0].spec.containers) > 1, \
        f"expected an autoscaler sidecar in the head Pod, containers: {[c.name for c in heads[0].spec.containers]}"

    def workers(n: int):
        ws = pods(k8s, namespace, name, "worker")
        return len(ws) == n and all(map(running_ready, ws)), ws

    # demand for 2 CPUs -> 2 workers (the group max)
    run_ray_job(k8s, namespace, svc, CREATE.format(n=2), timeouts.long)
    wait_for(lambda: workers(2), timeouts.long, "the autoscaler to add 2 Running+Ready workers", observe=observe)
    replicas = rc.get(name)["spec"]["workerGroupSpecs"][0]["replicas"]
    assert replicas <= 2, f"the autoscaler must stay within maxReplicas=2; spec replicas={replicas}"

    # demand gone -> idle workers removed after idleTimeoutSeconds
    run_ray_job(k8s, namespace, svc, KILL.format(n=2), timeouts.medium)
    wait_for(lambda: workers(0), timeouts.long, "idle workers to be removed after the idle timeout", observe=observe)

    # raising minReplicas adds a worker without any demand
    spec = rc.get(name)["spec"]
    spec["workerGroupSpecs"][0]["minReplicas"] = 1
    rc.patch(name, {"spec": {"workerGroupSpecs": spec["workerGroupSpecs"]}})
    wait_for(lambda: workers(1), timeouts.long, "minReplicas=1 to add one worker", observe=observe)
