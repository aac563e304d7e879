"""Autoscaler v1 and v2: Ray demand scales a worker group up within its max, idle workers go, minReplicas is honored."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import ray_job_must_succeed, workers_must_be_running_and_ready

from .helpers import create_provisioned

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
    """With in-tree autoscaling, the head Pod gets an autoscaler sidecar; Ray tasks that need more CPUs than the
    cluster has add workers up to the group's maxReplicas, workers left idle are removed, and raising minReplicas
    adds a worker without any demand."""
    body = ray.sample("raycluster-autoscaler", ray_version)
    body["spec"]["autoscalerOptions"]["version"] = version
    name = body["metadata"]["name"]
    rc, obj = create_provisioned(k8s, namespace, body, timeouts.long)
    svc = obj["status"]["head"]["serviceName"]
    containers = [c.name for c in ray.cluster_pods(k8s, namespace, name, "head")[0].spec.containers]
    assert "autoscaler" in containers or len(containers) > 1, \
        f"expected an autoscaler sidecar in the head Pod, containers: {containers}"

    ray_job_must_succeed(k8s, namespace, svc, CREATE.format(n=2), timeouts.long)  # demand for 2 CPUs
    workers_must_be_running_and_ready(k8s, namespace, name, 2, timeouts.long, what="the autoscaler to add 2 workers")
    replicas = rc.get(name)["spec"]["workerGroupSpecs"][0]["replicas"]
    assert replicas <= 2, f"the autoscaler must stay within maxReplicas=2; spec replicas={replicas}"

    ray_job_must_succeed(k8s, namespace, svc, KILL.format(n=2), timeouts.medium)  # demand gone
    workers_must_be_running_and_ready(k8s, namespace, name, 0, timeouts.long,
                                      what="idle workers to be removed after the idle timeout")

    groups = rc.get(name)["spec"]["workerGroupSpecs"]
    groups[0]["minReplicas"] = 1
    rc.patch(name, {"spec": {"workerGroupSpecs": groups}})
    workers_must_be_running_and_ready(k8s, namespace, name, 1, timeouts.long, what="minReplicas=1 to add one worker")
