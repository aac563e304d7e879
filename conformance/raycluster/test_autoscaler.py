"""Autoscaler v1 and v2: Ray demand scales a worker group up within its max, idle workers go, minReplicas is honored."""
from __future__ import annotations

import uuid

import pytest

from fixtures import ray
from fixtures.waiting import wait_for

from .helpers import describe_pods, pods, running_ready

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


def run_job(k8s, namespace, svc, code: str, timeout: float) -> None:
    sid = f"as-{uuid.uuid4().hex[:8]}"
    wait_for(lambda: (ray.submit_job(k8s, namespace, svc, f'python -c "{code}"', sid)[0] == 200, True), timeout,
             "the Jobs API to accept a submission", observe=lambda: ray.job_status(k8s, namespace, svc, sid))
    st = wait_for(lambda: ((s := ray.job_status(k8s, namespace, svc, sid)) in ("SUCCEEDED", "FAILED", "STOPPED"), s),
                  timeout, f"Ray job {sid} to finish", observe=lambda: ray.job_status(k8s, namespace, svc, sid))
    assert st == "SUCCEEDED", f"Ray job {sid} ended {st}: {ray.job_logs(k8s, namespace, svc, sid)[-1500:]}"


@pytest.mark.parametrize("version", [pytest.param("v1", marks=pytest.mark.feature("RayClusterAutoscalerV1")),
                                     pytest.param("v2", marks=pytest.mark.feature("RayClusterAutoscalerV2"))])
def test_demand_scales_workers_up_and_idle_down(k8s, namespace, ray_version, timeouts, version):
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    body = ray.sample("raycluster-autoscaler", ray_version)
    body["spec"]["autoscalerOptions"]["version"] = version
    name = body["metadata"]["name"]
    rc.create(body)

    def observe():
        o = rc.get(name) or {}
        g = (o.get("spec") or {}).get("workerGroupSpecs", [{}])[0]
        return (f"replicas={g.get('replicas')}, desiredWorkerReplicas={(o.get('status') or {}).get('desiredWorkerReplicas')}, "
                f"Pods: {describe_pods(pods(k8s, namespace, name))}")

    obj = wait_for(lambda: ((c := ray.condition(o := rc.get(name), "RayClusterProvisioned")) is not None
                            and c["status"] == "True", o), timeouts.long, f"RayCluster {name} provisioned",
                   observe=observe)
    svc = obj["status"]["head"]["serviceName"]
    heads = pods(k8s, namespace, name, "head")
    assert any(c.name == "autoscaler" for c in heads[0].spec.containers) or len(heads[0].spec.containers) > 1, \
        f"expected an autoscaler sidecar in the head Pod, containers: {[c.name for c in heads[0].spec.containers]}"

    def workers(n: int):
        ws = pods(k8s, namespace, name, "worker")
        return len(ws) == n and all(map(running_ready, ws)), ws

    # demand for 2 CPUs -> 2 workers (the group max)
    run_job(k8s, namespace, svc, CREATE.format(n=2), timeouts.long)
    wait_for(lambda: workers(2), timeouts.long, "the autoscaler to add 2 Running+Ready workers", observe=observe)
    replicas = rc.get(name)["spec"]["workerGroupSpecs"][0]["replicas"]
    assert replicas <= 2, f"the autoscaler must stay within maxReplicas=2; spec replicas={replicas}"

    # demand gone -> idle workers removed after idleTimeoutSeconds
    run_job(k8s, namespace, svc, KILL.format(n=2), timeouts.medium)
    wait_for(lambda: workers(0), timeouts.long, "idle workers to be removed after the idle timeout", observe=observe)

    # raising minReplicas adds a worker without any demand
    spec = rc.get(name)["spec"]
    spec["workerGroupSpecs"][0]["minReplicas"] = 1
    rc.patch(name, {"spec": {"workerGroupSpecs": spec["workerGroupSpecs"]}})
    wait_for(lambda: workers(1), timeouts.long, "minReplicas=1 to add one worker", observe=observe)
