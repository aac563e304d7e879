"""GPU worker groups: a worker group limited to one nvidia.com/gpu lands on a GPU node, and Ray itself sees the
GPU - the cluster's resources count it, and a task asking for one GPU runs on that worker and is given it."""
from __future__ import annotations

import json
import re

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import ray_job_must_succeed
from rayconformance.fixtures.expect.workloads import describe_pods

from .helpers import create_provisioned

GPU = "nvidia.com/gpu"
# Runs inside the Ray cluster as a Ray job (python -c): single quotes only, no shell metacharacters.
PROBE = """
import json, time
import ray
ray.init()
deadline = time.time() + 60
while time.time() < deadline and not ray.cluster_resources().get('GPU'):
    time.sleep(1)
print('CLUSTER_GPU', json.dumps(ray.cluster_resources().get('GPU')))

@ray.remote(num_gpus=1)
def probe():
    import os
    import ray
    return {'node_id': ray.get_runtime_context().get_node_id(), 'gpu_ids': [str(g) for g in ray.get_gpu_ids()],
            'NVIDIA_VISIBLE_DEVICES': os.environ.get('NVIDIA_VISIBLE_DEVICES'),
            'CUDA_VISIBLE_DEVICES': os.environ.get('CUDA_VISIBLE_DEVICES')}

try:
    task = ray.get(probe.remote(), timeout=120)
except ray.exceptions.GetTimeoutError:
    task = None
if task:
    node = [n for n in ray.nodes() if n['NodeID'] == task['node_id']]
    task['node_ip'] = node[0]['NodeManagerAddress'] if node else None
    task['node_gpus'] = node[0]['Resources'].get('GPU') if node else None
print('GPU_TASK', json.dumps(task))
"""


def printed(logs: str, key: str):
    m = re.search(rf"^{key} (.*)$", logs, re.M)
    assert m, f"the Ray job printed no {key} line; logs:\n{logs[-2000:]}"
    return json.loads(m.group(1))


def start_command(pod) -> str:
    """The worker container's command line as the operator generated it (for failure messages)."""
    ctr = pod.spec.containers[0]
    env = {e.name: e.value for e in ctr.env or []}
    return env.get("KUBERAY_GEN_RAY_START_CMD") or " ".join((ctr.command or []) + (ctr.args or []))


@pytest.mark.feature("RayClusterGPUWorkerGroups")
def test_gpu_worker_group_gets_a_gpu(k8s, namespace, ray_version, timeouts, provider):
    """A worker group limited to one nvidia.com/gpu gets a worker Pod that keeps the limit and runs on a GPU
    node; Ray counts the GPU in its cluster resources, and a task asking for one GPU runs on that worker and is
    given one GPU id."""
    core = client.CoreV1Api(k8s)
    if provider.supports("gpu_nodes"):  # a provider that made GPU nodes: they must show up as such
        has_gpus = bool(provider.gpu_nodes())
    else:
        has_gpus = any(int((n.status.allocatable or {}).get(GPU, "0")) > 0 for n in core.list_node().items)
    if not has_gpus:
        pytest.skip(f"no Node offers {GPU}; use a cluster with GPU nodes (--cluster local-gpu or kind-gpu)")
    body = ray.sample("raycluster-gpu", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.long)

    workers = ray.cluster_pods(k8s, namespace, name, "worker")
    assert len(workers) == 1 and workers[0].metadata.labels.get("ray.io/group") == "gpu", \
        f"expected 1 worker Pod of group gpu, observed {describe_pods(workers)}"
    worker = workers[0]
    limits = {c.name: (c.resources.limits or {}).get(GPU) for c in worker.spec.containers if c.resources}
    assert "1" in limits.values(), \
        f"the worker Pod's container must keep the group's limit {GPU}: 1; observed limits {limits}"
    node = core.read_node(worker.spec.node_name)
    node_gpus = (node.status.capacity or {}).get(GPU)
    assert node_gpus and int(node_gpus) >= 1, \
        (f"the gpu worker Pod {worker.metadata.name} runs on Node {worker.spec.node_name}, whose capacity has no "
         f"{GPU} (observed {node_gpus!r}); expected a GPU node")

    logs = ray_job_must_succeed(k8s, namespace, obj["status"]["head"]["serviceName"], PROBE, timeouts.long)
    total = printed(logs, "CLUSTER_GPU")
    assert total == 1, \
        (f"Ray's cluster resources must count the worker's GPU: expected GPU 1, observed {total}; the worker's "
         f"start command: {start_command(worker)}")
    task = printed(logs, "GPU_TASK")
    assert task is not None, \
        f"a Ray task with num_gpus=1 was not scheduled within 120s; the worker's start command: {start_command(worker)}"
    assert task["node_ip"] == worker.status.pod_ip, \
        (f"the num_gpus=1 task should run on the gpu worker (Pod IP {worker.status.pod_ip}), "
         f"it ran on the Ray node at {task['node_ip']}")
    assert task["node_gpus"] == 1, f"the gpu worker's Ray node should offer GPU 1, observed {task['node_gpus']}"
    assert len(task["gpu_ids"]) == 1, \
        f"ray.get_gpu_ids() in the num_gpus=1 task should name one GPU, observed {task['gpu_ids']}"
    print(f"worker {worker.metadata.name} on {worker.spec.node_name}: Ray GPU ids {task['gpu_ids']}, "
          f"NVIDIA_VISIBLE_DEVICES={task['NVIDIA_VISIBLE_DEVICES']}, CUDA_VISIBLE_DEVICES={task['CUDA_VISIBLE_DEVICES']}")
