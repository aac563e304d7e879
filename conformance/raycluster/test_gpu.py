"""GPU worker groups: a worker group limited to one nvidia.com/gpu lands on a GPU node, and Ray itself sees the
GPU - the cluster's resources count it, and a task asking for one GPU runs on that worker and is given it. A GPU
group that starts empty is scaled from zero by GPU demand and back to zero, and a CPU Pod on a GPU node gets no GPU."""
from __future__ import annotations

import json
import re

import pytest

from rayconformance.testing.expect.workloads import describe_pods
from rayconformance.testing.programs import program

GPU = "nvidia.com/gpu"
NO_DEVICE = (None, "", "void", "none")  # NVIDIA_VISIBLE_DEVICES values that hand a container no GPU


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
@pytest.mark.samples("raycluster-gpu")
def test_gpu_worker_group_gets_a_gpu(ctx):
    """A worker group limited to one nvidia.com/gpu gets a worker Pod that keeps the limit and runs on a GPU
    node; Ray counts the GPU in its cluster resources, and a task asking for one GPU runs on that worker and is
    given one GPU id."""
    if not has_gpu_nodes(ctx):
        pytest.skip(f"no Node offers {GPU}; use a cluster with GPU nodes (--cluster local-gpu or kind-gpu)")
    cluster = ctx.create_raycluster("raycluster-gpu")
    cluster.must_be_provisioned()

    workers = cluster.pods("worker")
    assert len(workers) == 1 and workers[0].metadata.labels.get("ray.io/group") == "gpu", \
        f"expected 1 worker Pod of group gpu, observed {describe_pods(workers)}"
    worker = workers[0]
    limits = {c.name: (c.resources.limits or {}).get(GPU) for c in worker.spec.containers if c.resources}
    assert "1" in limits.values(), \
        f"the worker Pod's container must keep the group's limit {GPU}: 1; observed limits {limits}"
    node = ctx.core.read_node(worker.spec.node_name)
    capacity = (node.status.capacity or {}).get(GPU)
    assert capacity and int(capacity) >= 1, \
        (f"the gpu worker Pod {worker.metadata.name} runs on Node {worker.spec.node_name}, whose capacity has no "
         f"{GPU} (observed {capacity!r}); expected a GPU node")

    logs = cluster.ray_job_must_succeed(program("gpu_probe"))
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


def node_gpus(ctx, node: str) -> int:
    return int((ctx.core.read_node(node).status.capacity or {}).get(GPU, "0"))


def group_start_commands(cluster, group: str) -> dict[str, str]:
    return {p.metadata.name: start_command(p) for p in cluster.group_pods(group)}


def has_gpu_nodes(ctx) -> bool:
    if ctx.provider.supports("gpu_nodes"):  # a provider that made GPU nodes: they must show up as such
        return bool(ctx.provider.gpu_nodes())
    return any(int((n.status.allocatable or {}).get(GPU, "0")) > 0 for n in ctx.core.list_node().items)


@pytest.mark.feature("RayClusterGPUAutoscaling")
@pytest.mark.samples("raycluster-gpu-autoscale")
def test_gpu_group_scales_from_zero_and_back(ctx):
    """A GPU worker group at zero replicas (minReplicas 0, maxReplicas 2) is scaled by Ray's autoscaler: one actor
    asking for one GPU brings up exactly one GPU worker Pod, on a GPU node, whose Ray node offers GPU 1 and runs
    the actor; once the actor is gone the group goes back to zero Pods. A CPU-only worker Pod running on a GPU
    node is handed no GPU: its Ray node offers none and a task on it sees no GPU device."""
    if not has_gpu_nodes(ctx):
        pytest.skip(f"no Node offers {GPU}; use a cluster with GPU nodes (--cluster local-gpu or kind-gpu)")
    body = ctx.sample("raycluster-gpu-autoscale")
    cluster = ctx.raycluster(body["metadata"]["name"])

    with cluster.watch_pods(group="gpu") as gpu_pods:
        # step 1: the cluster comes up with its CPU worker on a GPU node and no GPU worker
        ctx.create_raycluster(body)
        cluster.must_be_provisioned()
        [cpu_worker] = cluster.group_workers_must_be_running_and_ready("cpu-on-gpu-node", 1, ctx.timeouts.medium,
                                                                       what="the CPU group's one worker")
        assert not gpu_pods.live_names(), \
            f"the gpu group (replicas 0) must start with no Pods; observed {gpu_pods.summary()}"

        # step 2: a CPU Pod on a GPU node is handed no GPU
        assert node_gpus(ctx, cpu_worker.spec.node_name) >= 1, \
            (f"the CPU group's nodeSelector nvidia.com/gpu.present=true should place {cpu_worker.metadata.name} on a "
             f"GPU node; Node {cpu_worker.spec.node_name} has no {GPU}")
        logs = cluster.ray_job_must_succeed(program("cpu_worker_probe", ip=cpu_worker.status.pod_ip))
        node, task = printed(logs, "CPU_NODE"), printed(logs, "CPU_TASK")
        assert node is not None and not node["gpus"] and task is not None and not task["gpu_ids"] \
            and task["NVIDIA_VISIBLE_DEVICES"] in NO_DEVICE, \
            (f"the CPU-only worker {cpu_worker.metadata.name} on GPU node {cpu_worker.spec.node_name} must be handed "
             f"no GPU (Ray node GPU 0, no GPU ids, no NVIDIA_VISIBLE_DEVICES device); observed Ray node {node}, "
             f"task {task}; start command: {start_command(cpu_worker)}")

        # step 3: demand for one GPU brings up exactly one GPU worker, which runs it
        logs = cluster.ray_job_must_succeed(program("gpu_demand", wait=int(ctx.timeouts.medium)))
        actor = printed(logs, "GPU_ACTOR")
        assert actor is not None, \
            (f"an actor asking for num_gpus=1 was not placed within {int(ctx.timeouts.medium)}s of the demand; gpu "
             f"group Pods: {gpu_pods.summary()}; their start commands: {group_start_commands(cluster, 'gpu')}")
        [worker] = cluster.group_workers_must_be_running_and_ready(
            "gpu", 1, ctx.timeouts.short, what="the autoscaler's one GPU worker for one GPU of demand")
        assert node_gpus(ctx, worker.spec.node_name) >= 1, \
            f"the GPU worker {worker.metadata.name} must run on a GPU node; Node {worker.spec.node_name} has no {GPU}"
        assert actor["node_ip"] == worker.status.pod_ip and actor["node_gpus"] == 1 and len(actor["gpu_ids"]) == 1, \
            (f"the num_gpus=1 actor must run on the GPU worker (Pod IP {worker.status.pod_ip}) whose Ray node offers "
             f"GPU 1, holding one GPU id; observed {actor}")

        # step 4: without the demand the group goes back to zero
        cluster.ray_job_must_succeed(program("gpu_release"), ctx.timeouts.medium)
        cluster.group_workers_must_be_running_and_ready("gpu", 0, what="the idle GPU worker to be removed after the "
                                                                       "idle timeout")
    gpu_pods.must_not_have_failed()
    assert gpu_pods.peak == 1 and len(gpu_pods.created) == 1, \
        f"one GPU of demand must bring up exactly one GPU worker Pod; observed {gpu_pods.summary()}"


@pytest.mark.feature("RayClusterGPUAutoscaling")
@pytest.mark.samples("raycluster-gpu-autoscale")
def test_cpu_demand_scales_the_cpu_group_not_the_gpu_one(ctx):
    """With a CPU worker group and a GPU worker group both at zero, Ray's autoscaler (v2) serves an actor that
    asks for one CPU and no GPU with a worker of the CPU group, which runs it; the GPU group, though its workers
    would have a CPU too, gets no Pod for CPU demand. A GPU of demand afterwards does bring up a GPU worker."""
    if not has_gpu_nodes(ctx):
        pytest.skip(f"no Node offers {GPU}; use a cluster with GPU nodes (--cluster local-gpu or kind-gpu)")
    body = ctx.sample("raycluster-gpu-autoscale")
    cpu_group = body["spec"]["workerGroupSpecs"][0]
    cpu_group.update(replicas=0, minReplicas=0)
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    with cluster.watch_pods(group="gpu") as gpu_pods:
        # step 1: CPU demand brings up a CPU worker, which runs it
        logs = cluster.ray_job_must_succeed(program("cpu_demand", wait=int(ctx.timeouts.medium)))
        ran_on = printed(logs, "CPU_ACTOR")
        [worker] = cluster.group_workers_must_be_running_and_ready(
            cpu_group["groupName"], 1, ctx.timeouts.short,
            what="one CPU of demand to bring up a worker of the CPU group")
        assert ran_on == worker.status.pod_ip, \
            (f"the num_cpus=1 actor must run on the CPU group's worker {worker.metadata.name} (Pod IP "
             f"{worker.status.pod_ip}); observed it {'on the Ray node at ' + ran_on if ran_on else 'not placed'}; "
             f"gpu group Pods: {gpu_pods.summary()}")
        assert not gpu_pods.created, \
            f"CPU demand must bring up no worker of the GPU group; observed {gpu_pods.summary()}"

        # step 2: the GPU group was there to be scaled: a GPU of demand brings up its worker
        logs = cluster.ray_job_must_succeed(program("gpu_demand", wait=int(ctx.timeouts.medium)))
        assert printed(logs, "GPU_ACTOR") is not None, \
            f"an actor asking for num_gpus=1 was not placed; gpu group Pods: {gpu_pods.summary()}"
        cluster.group_workers_must_be_running_and_ready("gpu", 1, ctx.timeouts.short,
                                                        what="one GPU of demand to bring up a GPU worker")
    gpu_pods.must_not_have_failed()
