"""The fake device plugin against the node agent's device manager, over real unix sockets in a temporary dir.

The plugin runs as its own process (as on a node), except where a test needs to change device health.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import pytest

from rayconformance.clusters.deviceplugin import api
from rayconformance.clusters.deviceplugin.plugin import FakeDevicePlugin
from rayconformance.clusters.local.devices import AllocationError, DeviceManager, plugin_command
from rayconformance.providers.kind import device_plugin_manifest

from .polling import wait_until

REPO = Path(__file__).resolve().parents[2]
GPU = "nvidia.com/gpu"


@pytest.fixture
def plugin_dir():
    d = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))  # short: unix socket paths hold 107 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def plugins(plugin_dir):
    """Starts fake device plugin processes for node n1; all are stopped at the end."""
    procs = []

    def start(count=4, argv=None, **kw):
        cmd = argv or plugin_command("n1", count, plugin_dir, poll_seconds=0.05)
        p = subprocess.Popen(cmd, cwd=kw.get("cwd", REPO), env=kw.get("env"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.terminate()
        p.wait(timeout=10)


@pytest.fixture
def managers(plugin_dir):
    made = []

    def make(**kw):
        m = DeviceManager("n1", plugin_dir, **kw)
        m.start()
        made.append(m)
        return m

    yield make
    for m in made:
        m.stop()


def gpus(manager):
    return manager.capacity().get(GPU)


def visible(env):
    return env["NVIDIA_VISIBLE_DEVICES"].split(",")


def test_messages_use_the_published_field_numbers():
    assert api.msg.Device(ID="a", health="Healthy").SerializeToString() == b"\n\x01a\x12\x07Healthy"
    assert api.msg.RegisterRequest(resource_name="x/y", options=api.msg.DevicePluginOptions(
        get_preferred_allocation_available=True)).SerializeToString() == b"\x1a\x03x/y\"\x02\x10\x01"
    assert api.msg.ContainerAllocateResponse(envs={"A": "b"}).SerializeToString() == b"\n\x06\n\x01A\x12\x01b"
    cdi = api.msg.ContainerAllocateResponse(cdi_devices=[api.msg.CDIDevice(name="v/g=0")])
    assert cdi.SerializeToString() == b"*\x07\n\x05v/g=0"
    assert api.msg.ContainerPreferredAllocationRequest(
        must_include_deviceIDs=["m"], allocation_size=2).SerializeToString() == b"\x12\x01m\x18\x02"


def test_plugin_registers_and_advertises_its_devices(plugin_dir, plugins, managers):
    seen = []
    m = managers(on_change=seen.append)
    plugins(count=4)
    wait_until(lambda: gpus(m) == 4, what="4 GPUs")
    assert list(m.devices(GPU)) == [f"GPU-fake-n1-{i}" for i in range(4)]
    assert seen[-1] == {GPU: 4}
    assert (plugin_dir / "fake-nvidia.com-gpu.sock").is_socket()


def test_devices_are_never_handed_out_twice(plugins, managers):
    m = managers()
    plugins(count=4)
    wait_until(lambda: gpus(m) == 4, what="4 GPUs")
    a = visible(m.allocate("pod-a", "worker", GPU, 2))
    b = visible(m.allocate("pod-b", "worker", GPU, 2))
    assert len(set(a)) == 2 and len(set(b)) == 2 and not set(a) & set(b)
    assert m.allocate("pod-a", "worker", GPU, 2) == {"NVIDIA_VISIBLE_DEVICES": ",".join(a)}  # asked again: same
    with pytest.raises(AllocationError, match=r"unavailable for nvidia.com/gpu. Requested: 1, Available: 0"):
        m.allocate("pod-c", "worker", GPU, 1)
    m.release("pod-a")
    assert set(visible(m.allocate("pod-c", "worker", GPU, 2))) == set(a)
    assert m.allocated("pod-c") == {"worker": {GPU: a}}
    assert m.allocate("pod-d", "main", GPU, 0) == {}


def test_allocating_a_resource_no_plugin_serves(managers):
    m = managers()
    with pytest.raises(AllocationError, match="no device plugin for example.com/fpga has registered on node n1"):
        m.allocate("pod", "c", "example.com/fpga", 1)


def test_plugin_restart_registers_again_and_allocations_survive(plugins, managers):
    m = managers()
    first = plugins(count=4)
    wait_until(lambda: gpus(m) == 4, what="4 GPUs")
    held = visible(m.allocate("pod-a", "worker", GPU, 3))
    first.terminate()
    first.wait(timeout=10)
    wait_until(lambda: gpus(m) == 0, what="the plugin's devices to turn unhealthy")
    with pytest.raises(AllocationError, match="has gone away"):
        m.allocate("pod-b", "worker", GPU, 1)
    plugins(count=4)
    wait_until(lambda: gpus(m) == 4, what="the new plugin's 4 GPUs")
    other = visible(m.allocate("pod-b", "worker", GPU, 1))
    assert not set(other) & set(held)
    with pytest.raises(AllocationError, match="Available: 0"):
        m.allocate("pod-c", "worker", GPU, 1)


def test_manager_restart_keeps_allocations_and_the_plugin_registers_again(plugin_dir, plugins, managers):
    m = managers()
    p = plugins(count=4)
    wait_until(lambda: gpus(m) == 4, what="4 GPUs")
    held = visible(m.allocate("pod-a", "worker", GPU, 2))
    m.stop()
    assert not (plugin_dir / "kubelet.sock").exists()
    again = managers()  # a restarted node agent, same state file
    assert again.allocated("pod-a") == {"worker": {GPU: held}}
    wait_until(lambda: gpus(again) == 4, what="re-registration")
    assert again.allocate("pod-a", "worker", GPU, 2) == {"NVIDIA_VISIBLE_DEVICES": ",".join(held)}
    rest = visible(again.allocate("pod-b", "worker", GPU, 2))
    assert not set(rest) & set(held)
    with pytest.raises(AllocationError):
        again.allocate("pod-c", "worker", GPU, 1)
    again.retain(["pod-b"])
    assert again.allocated("pod-a") == {} and gpus(again) == 4
    assert p.poll() is None


def test_health_changes_reach_capacity_and_the_callback(plugin_dir, managers):
    seen = []
    m = managers(on_change=seen.append)
    plugin = FakeDevicePlugin(GPU, 3, "n1", plugin_dir, poll_seconds=0.05)
    plugin.start()
    try:
        wait_until(lambda: gpus(m) == 3, what="3 GPUs")
        plugin.set_health("GPU-fake-n1-0", healthy=False)
        wait_until(lambda: gpus(m) == 2, what="one unhealthy GPU")
        assert seen[-2:] == [{GPU: 3}, {GPU: 2}]
        assert "GPU-fake-n1-0" not in visible(m.allocate("pod", "c", GPU, 2))
    finally:
        plugin.stop()
    assert not (plugin_dir / "fake-nvidia.com-gpu.sock").exists()


def test_plugin_service_answers_directly(plugin_dir):
    plugin = FakeDevicePlugin(GPU, 4, "n1", plugin_dir, poll_seconds=0.05)
    plugin.start()
    try:
        with grpc.insecure_channel(api.target(plugin.socket)) as ch:
            stub = api.Stub(ch, "DevicePlugin")
            assert stub.GetDevicePluginOptions(api.msg.Empty(), timeout=5).get_preferred_allocation_available
            pref = stub.GetPreferredAllocation(api.msg.PreferredAllocationRequest(container_requests=[
                api.msg.ContainerPreferredAllocationRequest(available_deviceIDs=["GPU-fake-n1-3", "GPU-fake-n1-1"],
                                                            must_include_deviceIDs=["GPU-fake-n1-2"],
                                                            allocation_size=2)]), timeout=5)
            assert list(pref.container_responses[0].deviceIDs) == ["GPU-fake-n1-2", "GPU-fake-n1-1"]
            with pytest.raises(grpc.RpcError) as e:
                stub.Allocate(api.msg.AllocateRequest(container_requests=[
                    api.msg.ContainerAllocateRequest(devices_ids=["GPU-other"])]), timeout=5)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert stub.PreStartContainer(api.msg.PreStartContainerRequest(), timeout=5) is not None
    finally:
        plugin.stop()


def test_registration_rejects_a_wrong_version(plugin_dir, managers):
    m = managers()
    with grpc.insecure_channel(api.target(m.socket)) as ch, pytest.raises(grpc.RpcError) as e:
        api.Stub(ch, "Registration").Register(api.msg.RegisterRequest(
            version="v1alpha", endpoint="x.sock", resource_name=GPU), timeout=5)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "v1beta1" in e.value.details()


def test_the_configmap_source_runs_as_a_top_level_package(plugin_dir, plugins, managers, tmp_path):
    """What the kind DaemonSet runs: the ConfigMap's files as package `deviceplugin`, outside this repo."""
    configmap, ds = device_plugin_manifest("rayproject/ray:2.46.0", 2)
    pkg = tmp_path / "src" / "deviceplugin"
    pkg.mkdir(parents=True)
    for name, text in configmap["data"].items():
        (pkg / name).write_text(text)
    ctr = ds["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(NODE_NAME)", "n1").replace(api.DEVICE_PLUGIN_PATH, str(plugin_dir)) for a in ctr["args"]]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    m = managers()
    plugins(argv=[sys.executable, *ctr["command"][1:], *args, "--poll-interval", "0.05"], cwd=tmp_path, env=env)
    wait_until(lambda: gpus(m) == 2, what="2 GPUs from the shipped source")
    assert visible(m.allocate("pod", "c", GPU, 2)) == ["GPU-fake-n1-0", "GPU-fake-n1-1"]


def test_stop_leaves_no_threads_or_sockets(plugin_dir, plugins):
    m = DeviceManager("n1", plugin_dir)
    m.start()
    plugins(count=1)
    wait_until(lambda: gpus(m) == 1, what="1 GPU")
    m.stop()
    m.stop()
    assert not (plugin_dir / "kubelet.sock").exists()
    assert [t.name for t in threading.enumerate() if t.name.startswith("devices-")] == []


def test_stop_is_prompt_while_a_registered_plugin_never_answers(plugin_dir):
    m = DeviceManager("n1", plugin_dir)
    m.start()
    with grpc.insecure_channel(api.target(m.socket)) as ch:
        api.Stub(ch, "Registration").Register(api.msg.RegisterRequest(
            version=api.VERSION, endpoint="silent.sock", resource_name=GPU), timeout=5)
    assert gpus(m) == 0
    started = time.monotonic()
    m.stop()
    assert time.monotonic() - started < 2


TPU = "google.com/tpu"


def test_any_extended_resource_is_served_beside_the_gpus(plugin_dir, plugins, managers):
    """A plugin for google.com/tpu registers next to the GPU plugin on the same node: each resource has its own
    socket, devices (TPU-fake-<node>-<i>), capacity and allocations, and a container's TPUs come in
    TPU_VISIBLE_DEVICES."""
    m = managers()
    plugins(count=2)
    plugins(argv=plugin_command("n1", 4, plugin_dir, resource=TPU, poll_seconds=0.05))
    wait_until(lambda: m.capacity() == {GPU: 2, TPU: 4}, what="2 GPUs and 4 TPUs")
    assert list(m.devices(TPU)) == [f"TPU-fake-n1-{i}" for i in range(4)]
    assert all((plugin_dir / f"fake-{r.replace('/', '-')}.sock").is_socket() for r in (GPU, TPU))
    tpus = m.allocate("pod-a", "worker", TPU, 4)
    assert set(tpus) == {"TPU_VISIBLE_DEVICES"}
    assert sorted(tpus["TPU_VISIBLE_DEVICES"].split(",")) == list(m.devices(TPU))
    with pytest.raises(AllocationError, match=r"unavailable for google.com/tpu. Requested: 1, Available: 0"):
        m.allocate("pod-b", "worker", TPU, 1)
    assert len(visible(m.allocate("pod-b", "worker", GPU, 2))) == 2  # the TPUs taken leave the GPUs free
    assert m.allocated("pod-a") == {"worker": {TPU: tpus["TPU_VISIBLE_DEVICES"].split(",")}}


def test_the_env_and_id_prefix_can_be_set(plugin_dir, plugins, managers):
    m = managers()
    plugins(argv=plugin_command("n1", 2, plugin_dir, resource="example.com/fpga", poll_seconds=0.05)
            + ["--env", "FPGA_IDS", "--id-prefix", "board"])
    wait_until(lambda: m.capacity() == {"example.com/fpga": 2}, what="2 FPGAs")
    assert m.allocate("pod", "c", "example.com/fpga", 2) == {"FPGA_IDS": "board-fake-n1-0,board-fake-n1-1"}


@pytest.mark.parametrize("resource", ["cpu", "memory", "kubernetes.io/gpu", "example.com/", "google.com/tpu/x"])
def test_a_name_that_is_no_extended_resource_is_refused(plugin_dir, resource):
    r = subprocess.run(plugin_command("n1", 1, plugin_dir, resource=resource), cwd=REPO, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "is not an extended resource name" in r.stderr, r.stderr
    with pytest.raises(ValueError, match="not an extended resource name"):
        FakeDevicePlugin(resource, 1, "n1", plugin_dir)


def test_names_derived_from_the_resource():
    from rayconformance.clusters.deviceplugin.resources import endpoint_for, env_for, id_prefix_for

    assert [(env_for(r), id_prefix_for(r), endpoint_for(r)) for r in (GPU, TPU, "example.com/foo-bar")] == [
        ("NVIDIA_VISIBLE_DEVICES", "GPU", "fake-nvidia.com-gpu.sock"),
        ("TPU_VISIBLE_DEVICES", "TPU", "fake-google.com-tpu.sock"),
        ("FOO_BAR_VISIBLE_DEVICES", "FOO-BAR", "fake-example.com-foo-bar.sock")]
