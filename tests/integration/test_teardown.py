"""Teardown leaves nothing behind: no process, network namespace, veth, bridge, mount or iptables rule —
after a normal run with Pods running, after a crash that lost the state dir, and after a conformance run that CI
cancelled with SIGTERM."""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bedkit import Cluster, pod_manifest, ready
from rayconformance.clusters import definition
from rayconformance.clusters.local import network, nodes, procs
from rayconformance.clusters.toolcache import CACHE
from rayconformance.clusters.local.testbed import TestBed

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def everything_left() -> list[str]:
    left = network.leftovers() + nodes.leftovers()
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    left += [f"iptables {line}" for line in rules.splitlines() if "KUBE-" in line]
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and os.readlink(d / "exe").startswith(str(CACHE)):
                left.append(f"process {d.name} {os.readlink(d / 'exe')}")
        except OSError:
            pass
    mounts = Path("/proc/self/mountinfo").read_text()
    left += [f"mount {line.split()[4]}" for line in mounts.splitlines()
             if "/run/rayconformance" in line.split()[4] or line.split()[4].startswith("/run/netns")]
    return left


def start_pods(c: Cluster) -> None:
    ns = c.namespace("teardown")
    for i in range(2):
        c.create(ns, pod_manifest(f"p{i}", [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                            "volumeMounts": [{"name": "m", "mountPath": "/dev/shm"},
                                                             {"name": "d", "mountPath": "/data/x"}]}],
                                  volumes=[{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                                           {"name": "d", "emptyDir": {}}]))
    for i in range(2):
        c.wait_pod(ns, f"p{i}", ready, 60)
    c.create(ns, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                  "spec": {"selector": {"x": "y"}, "ports": [{"port": 80}]}})


def test_teardown_after_a_normal_run(beds):
    c = beds.get("local-cpu")
    start_pods(c)
    beds.close()
    assert everything_left() == []
    assert not Path("/data/x").exists()


def lose_state_dir(state: Path, attempts: int = 5) -> None:
    """The bed's state dir removed while its other processes still run: etcd (its data dir is in it) may create a
    file between a pass's listing and its last rmdir, so a pass that leaves something is followed by another."""
    for _ in range(attempts):
        shutil.rmtree(state, ignore_errors=True)
        if not state.exists():
            return
    assert not state.exists(), f"{state} still holds {sorted(p.name for p in state.rglob('*'))[:20]}"


@pytest.mark.parametrize("cluster", ["local-cpu", "local-gpu"])
def test_teardown_after_a_crash_that_lost_the_state_dir(cluster):
    bed = TestBed(definition.load(cluster))
    bed.up()
    try:
        c = Cluster(bed)
        start_pods(c)
        plugins = [int(f.read_text()) for f in (bed.state / "pids").glob("deviceplugin-*.pid")]
        assert len(plugins) == (2 if cluster == "local-gpu" else 0), plugins  # its GPUs' and TPUs' plugins
        # crash: the agent and kube-proxy die without cleaning up, and the state dir is lost
        for name in ("nodeagent", "kube-proxy"):
            pid = int((bed.state / "pids" / f"{name}.pid").read_text())
            os.kill(pid, signal.SIGKILL)
            procs.stop_pid(pid, grace=5)
        lose_state_dir(bed.state)
        assert nodes.leftovers(), "Pods are still running after the crash"
        assert all(f"process {p}" in nodes.leftovers() for p in plugins), "the device plugin outlives the crash"
    finally:
        bed.down()
    assert everything_left() == []
    assert not any(procs.alive(p) for p in plugins)


def run_raycluster_exists(run_id: str, kubeconfig: Path) -> bool:
    """Whether a RayCluster of the run is in the bed's API: its test's body is running."""
    if not kubeconfig.is_file():
        return False
    from kubernetes import client, config

    try:
        api = config.new_client_from_config(str(kubeconfig))
        namespaces = client.CoreV1Api(api).list_namespace(label_selector=f"rayconformance.io/run={run_id}").items
        return any(client.CustomObjectsApi(api).list_namespaced_custom_object(
            "ray.io", "v1", ns.metadata.name, "rayclusters")["items"] for ns in namespaces)
    except Exception:  # the API not up yet, or the CRD not installed yet
        return False


def test_a_run_cancelled_by_sigterm_mid_test_reports_and_leaves_nothing(tmp_path):
    """As CI cancels a job: a conformance run on the local bed, started in the background (SIGINT ignored) and sent
    SIGTERM while its test runs (once the test's RayCluster exists), names the test interrupted in its report, exits
    non-zero and takes the bed down."""
    test, run_id = "head_and_workers_provisioned", "sigterm"
    argv = [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-v", "-n", "0", "--cluster",
            "local-cpu", "--run-test", test, "--run-id", run_id, "--report-dir", str(tmp_path)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    kubeconfig, out, deadline = TestBed(definition.load("local-cpu")).kubeconfig, b"", time.monotonic() + 900
    try:
        while proc.poll() is None and time.monotonic() < deadline and not run_raycluster_exists(run_id, kubeconfig):
            if select.select([proc.stdout], [], [], 1)[0]:
                out += os.read(proc.stdout.fileno(), 65536)
        assert proc.poll() is None, f"the run ended before its test made its RayCluster: {out.decode()[-3000:]}"
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=300)
        out += rest
    finally:
        proc.kill()
    output = out.decode(errors="replace")
    assert proc.returncode not in (0, -signal.SIGTERM, 128 + signal.SIGTERM), output[-3000:]
    ran = [t for t in yaml.safe_load((tmp_path / run_id / "conformance-report.yaml").read_text())["tests"]
           if t["outcome"] != "skipped"]
    assert [(t["name"], t["outcome"]) for t in ran] == [(test, "failed")], (ran, output[-3000:])
    assert "interrupted" in output, output[-3000:]
    assert everything_left() == []
