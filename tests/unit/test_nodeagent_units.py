"""Unit tests of the node agent's pure parts: env expansion, Service links, phase rules, files it writes."""
from __future__ import annotations

import os

import pytest

from rayconformance.clusters.local.nodeagent import devices, env, sandbox, status, volumes

from .polling import wait_until


def test_expand_follows_kubelet_rules():
    vals = {"A": "1", "B": "two"}.get
    assert env.expand("$(A)-$(B)", vals) == "1-two"
    assert env.expand("$(MISSING)", vals) == "$(MISSING)"
    assert env.expand("$$(A)", vals) == "$(A)"
    assert env.expand("a$$b", vals) == "a$b"
    assert env.expand("$(A", vals) == "$(A"
    assert env.expand("$x$", vals) == "$x$"
    assert env.expand("$()", vals) == "$()"


def test_service_links_and_ordering():
    svcs = [{"metadata": {"name": "web-svc"}, "spec": {"clusterIP": "10.96.0.7", "ports": [
        {"name": "http", "port": 80, "protocol": "TCP"}, {"port": 443}]}},
            {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}]
    e = env.service_env(svcs)
    assert e["WEB_SVC_SERVICE_HOST"] == "10.96.0.7"
    assert e["WEB_SVC_SERVICE_PORT"] == "80"
    assert e["WEB_SVC_SERVICE_PORT_HTTP"] == "80"
    assert e["WEB_SVC_PORT"] == "tcp://10.96.0.7:80"
    assert e["WEB_SVC_PORT_443_TCP_ADDR"] == "10.96.0.7"
    assert not any(k.startswith("HEADLESS") for k in e)


class _Res(env.Resolver):
    def configmap(self, ns, name):
        return {"data": {"k": "cm-value", "bad=key": "x"}} if name == "cm" else None

    def secret(self, ns, name):
        return {"data": {"pw": "c2VjcmV0"}} if name == "s" else None

    def services(self, ns):
        return []

    def kubernetes_service(self):
        return {"metadata": {"name": "kubernetes"}, "spec": {"clusterIP": "10.96.0.1", "ports": [
            {"name": "https", "port": 443}]}}


def _pod(ctr):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"ray.io/cluster": "c"}},
            "spec": {"nodeName": "n1", "containers": [ctr]}}


def test_container_env():
    ctr = {"name": "c", "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}},
           "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "P_"}],
           "env": [{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)-$(KUBERNETES_SERVICE_HOST)"},
                   {"name": "CL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
                   {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                   {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                   {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                   {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                   {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}}}]}
    e = env.container_env(_pod(ctr), ctr, _Res(), "10.244.1.5", "10.240.0.1", {"cpu": "16"})
    assert e["P_k"] == "cm-value" and "P_bad=key" not in e
    assert e["B"] == "x-10.96.0.1"
    assert e["CL"] == "c" and e["IP"] == "10.244.1.5"
    assert e["CPU"] == "2" and e["MEM"] == "1024"
    assert e["PW"] == "secret" and "OPT" not in e
    assert e["KUBERNETES_SERVICE_PORT"] == "443"


def test_missing_configmap_is_a_config_error():
    ctr = {"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}]}
    with pytest.raises(env.EnvError, match='configmap "nope" not found'):
        env.container_env(_pod(ctr), ctr, _Res(), None, None, {})


def _c(kind, state, last=None):
    c = status.CState("x", kind, "img")
    c.state, c.last_state = state, last or {}
    return c


def test_phase_rules():
    run, ok, bad = status.running(0), status.terminated(0, None, 0, 1, ""), status.terminated(3, None, 0, 1, "")
    crash = status.waiting("CrashLoopBackOff")
    assert status.compute_phase("Always", [], [_c("app", run)]) == "Running"
    assert status.compute_phase("Never", [], [_c("app", ok)]) == "Succeeded"
    assert status.compute_phase("Never", [], [_c("app", bad)]) == "Failed"
    assert status.compute_phase("Always", [], [_c("app", crash, bad)]) == "Running"
    assert status.compute_phase("OnFailure", [], [_c("app", crash, bad)]) == "Running"
    assert status.compute_phase("Always", [_c("init", run)], [_c("app", status.waiting("PodInitializing"))]) == "Pending"
    assert status.compute_phase("Never", [_c("init", bad)], [_c("app", status.waiting("PodInitializing"))]) == "Failed"
    assert status.compute_phase("Always", [], [_c("app", status.terminated(137, None, 0, 1, ""))],
                                pod_terminal=True) == "Failed"
    assert status.compute_phase("Always", [], [_c("app", ok)], pod_terminal=True) == "Succeeded"


def test_a_container_restart_policy_of_its_own_keeps_a_never_pod_running():
    """Container restart rules (Kubernetes 1.35+): a container with restartPolicy OnFailure in a Pod with
    restartPolicy Never is restarted on a non-zero exit, and while it waits to run again the Pod stays Running."""
    run, ok, bad = status.running(0), status.terminated(0, None, 0, 1, ""), status.terminated(137, None, 0, 1, "")
    own = {"x": "OnFailure"}
    assert status.compute_phase("Never", [], [_c("app", status.waiting("ContainerCreating"), bad)],
                                own_policies=own) == "Running"
    assert status.compute_phase("Never", [], [_c("app", bad)], own_policies={"other": "OnFailure"}) == "Failed"
    assert status.compute_phase("Never", [], [_c("app", ok)], own_policies=own) == "Succeeded"
    assert status.compute_phase("Always", [], [_c("app", bad)], own_policies={"x": "Never"}) == "Failed"
    assert status.compute_phase("Never", [], [_c("app", run), _c("app", bad)], own_policies=own) == "Running"


def test_conditions_keep_transition_time():
    c = status.Conditions()
    c.set("Ready", False, 100.0, "ContainersNotReady")
    c.set("Ready", False, 200.0, "ContainersNotReady")
    t1 = c.state["Ready"]["lastTransitionTime"]
    c.set("Ready", True, 300.0)
    assert t1 == status.rfc3339(100.0) and c.state["Ready"]["lastTransitionTime"] == status.rfc3339(300.0)


def test_resolv_conf_and_hosts():
    pod = {"metadata": {"name": "p", "namespace": "team"}, "spec": {"subdomain": "sub", "hostname": "h"}}
    rc = sandbox.resolv_conf(pod, "10.240.0.10")
    assert rc == ("nameserver 10.240.0.10\nsearch team.svc.cluster.local svc.cluster.local cluster.local\n"
                  "options ndots:5\n")
    assert "10.244.1.9\th.sub.team.svc.cluster.local\th" in sandbox.hosts_file(pod, "10.244.1.9", "h")


def test_atomic_writer(tmp_path):
    root = tmp_path / "vol"
    assert volumes.write_atomic_dir(root, {"a": (b"1", 0o644), "d/b": (b"2", 0o600)})
    assert (root / "a").read_text() == "1" and (root / "d" / "b").read_text() == "2"
    assert not volumes.write_atomic_dir(root, {"a": (b"1", 0o644), "d/b": (b"2", 0o600)})
    assert volumes.write_atomic_dir(root, {"a": (b"3", 0o644)})
    assert (root / "a").read_text() == "3" and not (root / "d").exists()
    assert os.readlink(root / "a") == "..data/a"
    assert len([p for p in root.iterdir() if p.name.startswith("..2")]) == 1


def test_token_refresh_rule():
    assert not volumes.Tokens.needs_refresh(0, 3600, 2800)
    assert volumes.Tokens.needs_refresh(0, 3600, 2900)
    assert volumes.Tokens.needs_refresh(0, 10 * 86400, 86401)


@pytest.fixture
def gpu_state():
    """A short state dir (unix socket paths hold 107 bytes); plugin processes left by a failing test are stopped."""
    import shutil
    import tempfile
    from pathlib import Path

    from rayconformance.clusters.local import procs
    d = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    yield d
    for f in (d / "pids").glob("*.pid"):
        procs.stop(d, f.stem, grace=5)
    shutil.rmtree(d, ignore_errors=True)


def test_gpus_come_from_the_fake_device_plugin(gpu_state):
    from rayconformance.clusters.local import procs, section
    defn = section.load("local-gpu")
    changed = []
    g = devices.PluginDevices(defn, gpu_state, on_change=changed.append, restart_backoff=0.5)
    assert g.capacity("rc-gpu-1") == {"nvidia.com/gpu": 0, "google.com/tpu": 0} and g.capacity("rc-node-1") == {}
    g.start()
    try:
        assert g.wait_registered(20) == []
        wait_until(lambda: g.capacity("rc-gpu-1")["nvidia.com/gpu"] == 4, what="4 GPUs from the plugin")
        assert "rc-gpu-1" in changed
        pid = g.plugin_pid("rc-gpu-1")
        assert pid and (gpu_state / "device-plugins" / "rc-gpu-1" / "kubelet.sock").is_socket()

        def ids(env):
            return env["NVIDIA_VISIBLE_DEVICES"].split(",")
        a = ids(g.allocate("rc-gpu-1", "pod1", "c", 2))
        b = ids(g.allocate("rc-gpu-1", "pod2", "c", 2))
        assert len(set(a + b)) == 4 and all(d.startswith("GPU-fake-rc-gpu-1-") for d in a + b)
        assert ids(g.allocate("rc-gpu-1", "pod1", "c", 2)) == a  # asking again: the same devices
        with pytest.raises(devices.AdmissionError, match="Requested: 1, Available: 0"):
            g.allocate("rc-gpu-1", "pod3", "c", 1)
        with pytest.raises(devices.AdmissionError, match="no device plugin"):
            g.allocate("rc-node-1", "pod3", "c", 1)
        g.release("pod1")
        assert ids(g.allocate("rc-gpu-1", "pod3", "c", 2)) == a
        g.retain("rc-gpu-1", ["pod3"])  # pod2 was deleted while nobody watched
        assert g.allocated("rc-gpu-1", "pod2") == {} and g.allocated("rc-gpu-1", "pod3") == {"c": {
            "nvidia.com/gpu": a}}

        # the plugin dies: no healthy devices; it is started again and registers again
        procs.stop_pid(pid, grace=5)
        wait_until(lambda: g.capacity("rc-gpu-1")["nvidia.com/gpu"] == 0, what="capacity 0 without the plugin")
        wait_until(lambda: g.capacity("rc-gpu-1")["nvidia.com/gpu"] == 4, what="the restarted plugin's 4 GPUs")
        assert g.plugin_pid("rc-gpu-1") not in (None, pid)
    except BaseException:
        g.stop()
        raise

    # an agent crash: the plugin lives on; a new agent adopts it, it registers again, allocations survive
    pid = g.plugin_pid("rc-gpu-1")
    g._stop.set()  # the agent's threads and sockets go away, the plugin process does not
    g._supervisor.join()
    for m in g.managers.values():
        m.stop()
    g2 = devices.PluginDevices(defn, gpu_state)
    g2.start()
    try:
        assert g2.plugin_pid("rc-gpu-1") == pid
        wait_until(lambda: g2.capacity("rc-gpu-1")["nvidia.com/gpu"] == 4, what="the adopted plugin to register")
        with pytest.raises(devices.AdmissionError):
            g2.allocate("rc-gpu-1", "pod4", "c", 3)
        assert set(ids(g2.allocate("rc-gpu-1", "pod4", "c", 2))) == set(b)
    finally:
        g2.stop()
    assert not procs.alive(pid)
    assert [p.name for p in (gpu_state / "device-plugins" / "rc-gpu-1").iterdir() if p.is_socket()] == []


def test_tpu_nodes_get_their_own_plugins_and_pods_any_resource(gpu_state):
    """A definition whose nodes serve google.com/tpu (local-tpu) and, on one node, nvidia.com/gpu too: one plugin
    process per node and resource, each node's capacity lists its own resources, and allocation is per resource."""
    import dataclasses

    from rayconformance.clusters.local import procs, section
    defn = section.load("local-tpu")
    nodes = tuple(dataclasses.replace(n, devices={**n.devices, "nvidia.com/gpu": 1}) if n.name == "rc-tpu-2" else n
                  for n in defn.nodes)
    defn = dataclasses.replace(defn, nodes=nodes)
    g = devices.PluginDevices(defn, gpu_state, restart_backoff=0.5)
    assert g.resources == ("google.com/tpu", "nvidia.com/gpu")
    assert g.capacity("rc-tpu-2") == {"google.com/tpu": 0, "nvidia.com/gpu": 0} and g.capacity("rc-node-1") == {}
    g.start()
    try:
        assert g.wait_registered(20) == []
        wait_until(lambda: g.capacity("rc-tpu-1") == {"google.com/tpu": 4}
                   and g.capacity("rc-tpu-2") == {"google.com/tpu": 4, "nvidia.com/gpu": 1}, what="every plugin")
        pids = {(n, r): g.plugin_pid(n, r) for n, r in g.plugins}
        assert len(set(pids.values())) == 3 and None not in pids.values()
        assert (gpu_state / "pids" / "deviceplugin-rc-tpu-1-google.com-tpu.pid").exists()
        chips = g.allocate("rc-tpu-1", "pod1", "c", 4, "google.com/tpu")["TPU_VISIBLE_DEVICES"].split(",")
        assert sorted(chips) == [f"TPU-fake-rc-tpu-1-{i}" for i in range(4)]
        with pytest.raises(devices.AdmissionError, match="Requested: 1, Available: 0"):
            g.allocate("rc-tpu-1", "pod2", "c", 1, "google.com/tpu")
        assert g.allocate("rc-tpu-2", "pod2", "c", 1, "nvidia.com/gpu") == {
            "NVIDIA_VISIBLE_DEVICES": "GPU-fake-rc-tpu-2-0"}
        with pytest.raises(devices.AdmissionError, match="no device plugin for google.com/tpu on node rc-node-1"):
            g.allocate("rc-node-1", "pod3", "c", 1, "google.com/tpu")

        # one plugin dies: only its resource drops to 0, and it is started again
        procs.stop_pid(pids["rc-tpu-2", "google.com/tpu"], grace=5)
        wait_until(lambda: g.capacity("rc-tpu-2") == {"google.com/tpu": 0, "nvidia.com/gpu": 1},
                   what="the TPU plugin's chips gone, the GPU kept")
        wait_until(lambda: g.capacity("rc-tpu-2") == {"google.com/tpu": 4, "nvidia.com/gpu": 1},
                   what="the restarted TPU plugin")
    finally:
        g.stop()
    assert not any(procs.alive(p) for p in pids.values())


def test_image_rules_and_on_demand_ray_venv(tmp_path, monkeypatch):
    import threading

    from rayconformance.clusters.local import section
    from rayconformance.clusters.local.nodeagent import images
    monkeypatch.setattr(images, "VENVS", tmp_path)
    gate = threading.Event()

    def fake_install(version, python=None):
        gate.wait(5)
        (tmp_path / f"ray-{version}").mkdir()
        (tmp_path / f"ray-{version}" / ".complete").write_text("ok")
        return tmp_path / f"ray-{version}"
    monkeypatch.setattr(images, "ensure_ray_venv", fake_install)
    monkeypatch.setattr(images, "venv_ready", lambda v: (tmp_path / f"ray-{v}" / ".complete").exists())
    im = images.Images(section.load("local-cpu"))
    with pytest.raises(images.ImagePulling):
        im.resolve("rayproject/ray:2.99.0-py311")
    with pytest.raises(images.ImagePulling):  # still installing: one install, not two
        im.resolve("rayproject/ray:2.99.0")
    gate.set()
    for t in list(im._pulls.values()):
        t.join(5)
    rt = im.resolve("rayproject/ray:2.99.0")
    assert rt.path.startswith(str(tmp_path / "ray-2.99.0" / "bin")) and rt.home == "/home/ray"
    with pytest.raises(images.ImageError):
        im.resolve("rayproject/ray:nightly")
    with pytest.raises(images.ImageError, match="no image rule"):
        im.resolve("nginx:1.27")
    host = im.resolve("redis:7.2")
    assert host.argv(None, ["--port", "6380"]) == ["redis-server", "--port", "6380"]
    assert host.argv(["sh", "-c", "x"], None) == ["sh", "-c", "x"]


def test_nothing_enters_a_container_still_being_set_up():
    """A container's PID 1 is the shim's fork (its command line the shim's) until its mounts and working directory
    are set up; a postStart hook or an exec probe waits for the container's own command."""
    import subprocess
    import sys

    from rayconformance.clusters.local.nodeagent import containers
    setting_up = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", str(sandbox.CINIT), "shim",
                                   "spec.json"])
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not containers.runs_its_command(containers.Proc(run=0, shim_pid=0, shim_start=0, exit_file="",
                                                               error_file="", log="", started_at=0,
                                                               pid1=setting_up.pid))
        assert containers.runs_its_command(containers.Proc(run=0, shim_pid=0, shim_start=0, exit_file="",
                                                           error_file="", log="", started_at=0, pid1=running.pid))
    finally:
        for p in (setting_up, running):
            p.kill()
            p.wait()
