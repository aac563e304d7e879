"""GPU nodes get their GPUs from the fake device plugin, as a kubelet does: the plugin registers with the node
agent's device manager, the Node shows the devices the plugin lists, containers get the device IDs the plugin's
Allocate returns, an ID is never handed out twice while in use, and it comes back when its Pod is gone - across
a plugin crash and an agent crash too."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from bedkit import alive, kill_agent, cstatus, phase, pod_manifest, pod_processes, until
from rayconformance.clusters.local import nodes, procs
from rayconformance.clusters.local.nodeagent import devices

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
GPU_NODE, CPU_NODE = "rc-gpu-1", "rc-node-1"
PLUGIN = devices.process_name(GPU_NODE)


@pytest.fixture(scope="module")
def gpu(beds):
    return beds.get("local-gpu")


@pytest.fixture()
def gns(gpu, request):
    """A namespace per test; its Pods are gone (devices free again) before the next test starts."""
    name = gpu.test_namespace(request)
    yield name
    gpu.delete_namespace(name)
    until(lambda: not gpu.pods(name), 90, f"the Pods of namespace {name} to be gone")


def gpu_pod(name: str, n: int, **spec) -> dict:
    return pod_manifest(name, [{"name": "c", "image": "busybox",
                                "command": ["sh", "-c", "echo DEVICES=$NVIDIA_VISIBLE_DEVICES; sleep 3600"],
                                "resources": {"limits": {GPU: str(n)}}}],
                        terminationGracePeriodSeconds=1, **spec)


def devices_of(c, ns: str, name: str) -> list[str]:
    out = until(lambda: "DEVICES=" in c.logs(ns, name, "c") and c.logs(ns, name, "c"), 30, f"{name} output")
    return out.split("DEVICES=", 1)[1].split()[0].split(",")


def node_gpus(c, node: str) -> tuple[str | None, str | None]:
    st = c.core.read_node(node).status
    return (st.capacity or {}).get(GPU), (st.allocatable or {}).get(GPU)


def plugin_pid(c) -> int | None:
    f = c.state / "pids" / f"{PLUGIN}.pid"
    return int(f.read_text()) if f.exists() and procs.alive(int(f.read_text())) else None


def log_of(c, name: str) -> str:
    return (c.state / "logs" / f"{name}.log").read_text(errors="replace")


def test_the_plugin_registers_and_the_node_shows_its_gpus(gpu):
    c = gpu
    pid = plugin_pid(c)
    assert pid, f"no fake device plugin runs for {GPU_NODE} ({c.state}/pids/{PLUGIN}.pid)"
    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"rayconformance.clusters.deviceplugin" in cmd and b"--count" in cmd and cmd[cmd.index(b"--count") + 1] == b"4", cmd
    sockets = sorted(p.name for p in devices.plugin_dir(c.state, GPU_NODE).iterdir() if p.is_socket())
    # local-gpu's accelerator node also serves TPU chips, through a second plugin of its own
    assert sockets == ["fake-google.com-tpu.sock", "fake-nvidia.com-gpu.sock", "kubelet.sock"], sockets
    assert f"registered {GPU} with" in log_of(c, PLUGIN), "the plugin's log shows no registration"
    assert f"node {GPU_NODE}: plugin for {GPU} registered" in log_of(c, "nodeagent")
    assert node_gpus(c, GPU_NODE) == ("4", "4")
    assert node_gpus(c, CPU_NODE) == (None, None), "the CPU node must not show GPUs"
    assert not devices.plugin_dir(c.state, CPU_NODE).exists(), "no device plugin on the CPU node"

    # the Node's GPUs are the plugin's: gone while the plugin is down, back once the agent restarted it
    os.kill(pid, signal.SIGKILL)
    until(lambda: node_gpus(c, GPU_NODE) == ("0", "0"), 10, f"{GPU_NODE} to show 0 GPUs without its plugin",
          lambda: node_gpus(c, GPU_NODE))
    until(lambda: node_gpus(c, GPU_NODE) == ("4", "4"), 60, f"{GPU_NODE} to show 4 GPUs from the restarted plugin",
          lambda: (node_gpus(c, GPU_NODE), plugin_pid(c)))
    assert plugin_pid(c) not in (None, pid)


def test_gpu_pods_get_distinct_device_ids_and_they_come_back(gpu, gns):
    c, ns = gpu, gns
    c.create(ns, gpu_pod("one", 1))
    p = c.wait_pod(ns, "one", phase("Running"), 60)
    assert p["spec"]["nodeName"] == GPU_NODE, "a Pod requesting nvidia.com/gpu must land on the GPU node"
    first = devices_of(c, ns, "one")
    assert len(first) == 1 and first[0].startswith(f"GPU-fake-{GPU_NODE}-"), first

    c.create(ns, gpu_pod("two", 2))
    p = c.wait_pod(ns, "two", phase("Running"), 60)
    assert p["spec"]["nodeName"] == GPU_NODE
    second = devices_of(c, ns, "two")
    assert len(set(second)) == 2 and all(d.startswith(f"GPU-fake-{GPU_NODE}-") for d in second), second
    assert not set(first) & set(second), f"devices handed out twice: {first} and {second}"

    # one device is left. Through the scheduler a Pod asking for 2 stays Pending (Unschedulable) ...
    c.create(ns, gpu_pod("too-many", 2))
    until(lambda: any(x["type"] == "PodScheduled" and x["status"] == "False" and x.get("reason") == "Unschedulable"
                      for x in (c.pod(ns, "too-many").get("status") or {}).get("conditions") or []), 30,
          "too-many Unschedulable")
    # ... and bound directly (bypassing the scheduler) the device manager rejects it at admission
    c.create(ns, gpu_pod("direct", 2, nodeName=GPU_NODE))
    p = c.wait_pod(ns, "direct", phase("Failed"), 30)
    assert p["status"].get("reason") == "UnexpectedAdmissionError", p["status"]
    assert "Requested: 2, Available: 1" in p["status"].get("message", ""), p["status"]
    c.delete_pod(ns, "direct")
    c.wait_gone(ns, "direct", 30)

    c.delete_pod(ns, "two")  # releases its two devices: the Pending Pod gets them
    c.wait_gone(ns, "two", 60)
    p = c.wait_pod(ns, "too-many", phase("Running"), 90)
    third = devices_of(c, ns, "too-many")
    assert set(third) == set(second), f"the freed devices {second} should be handed out again, got {third}"
    assert cstatus(p, "c")["ready"]


def test_devices_survive_an_agent_crash_and_come_back_from_pods_deleted_meanwhile(gpu, gns):
    c, ns = gpu, gns
    c.create(ns, gpu_pod("keep", 1))
    c.create(ns, gpu_pod("gone", 2))
    keep = c.wait_pod(ns, "keep", phase("Running"), 60)
    gone = c.wait_pod(ns, "gone", phase("Running"), 60)
    held, freed = devices_of(c, ns, "keep"), devices_of(c, ns, "gone")
    keep_pids, gone_pids = pod_processes(keep["metadata"]["uid"]), pod_processes(gone["metadata"]["uid"])
    plugin = plugin_pid(c)
    registrations = log_of(c, "nodeagent").count(f"plugin for {GPU} registered")

    kill_agent(c.state)
    assert plugin_pid(c) == plugin, "the device plugin must outlive the agent (like a DaemonSet Pod)"
    c.delete_pod(ns, "gone", grace=0)  # deleted while nobody watches: its devices must come back
    c.wait_gone(ns, "gone", 30)

    nodes.start_agent(c.defn, c.state)
    nodes.wait_ready(c.defn, c.state)  # includes: the GPU node shows its 4 GPUs again
    assert plugin_pid(c) == plugin, "the new agent adopts the running plugin"
    until(lambda: log_of(c, "nodeagent").count(f"plugin for {GPU} registered") > registrations, 30,
          "the adopted plugin to register with the new agent")
    until(lambda: not any(alive(p) for p in gone_pids), 30, "processes of the Pod deleted meanwhile cleaned up")
    assert all(alive(p) for p in keep_pids) and devices_of(c, ns, "keep") == held

    c.create(ns, gpu_pod("after", 3))
    c.wait_pod(ns, "after", phase("Running"), 60)
    after = devices_of(c, ns, "after")
    assert set(freed) <= set(after) and not set(held) & set(after), \
        f"after the restart: {held} still held by 'keep', {freed} freed by 'gone'; the new Pod got {after}"
