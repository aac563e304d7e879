"""Killing the node agent (SIGKILL) and starting it again re-adopts running Pods from its state records:
the same processes keep running, status fields do not reset, and the agent goes on managing them."""
from __future__ import annotations

import os
import signal

import pytest

from bedkit import alive, kill_agent, cstatus, phase, pod_manifest, pod_processes, ready, until
from rayconformance.clusters.local import nodes

pytestmark = pytest.mark.integration


def web(name: str) -> dict:
    return pod_manifest(name, [{"name": "web", "image": "python:3.11",
                                "command": ["python3", "-m", "http.server", "8080"],
                                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}],
                        terminationGracePeriodSeconds=5)


def test_agent_restart_readopts_running_pods(cpu, ns):
    cpu.create(ns, web("keep"))
    cpu.create(ns, web("orphan"))
    before = cpu.wait_pod(ns, "keep", ready, 60)
    orphan = cpu.wait_pod(ns, "orphan", ready, 60)
    st0 = cstatus(before, "web")
    pids = pod_processes(before["metadata"]["uid"])
    orphan_pids = pod_processes(orphan["metadata"]["uid"])
    assert pids and orphan_pids

    kill_agent(cpu.state)
    # while the agent is down: its Pods keep running; a Pod is force-deleted; a new Pod gets bound
    assert all(alive(p) for p in pids)
    cpu.delete_pod(ns, "orphan", grace=0)
    cpu.wait_gone(ns, "orphan", 30)
    cpu.create(ns, web("late"))
    until(lambda: (cpu.pod(ns, "late") or {}).get("spec", {}).get("nodeName"), 30, "late bound")

    nodes.start_agent(cpu.defn, cpu.state)
    nodes.wait_ready(cpu.defn, cpu.state)
    late = cpu.wait_pod(ns, "late", ready, 60, "Pod bound while the agent was down starts")
    assert late["status"]["phase"] == "Running"
    until(lambda: not any(alive(p) for p in orphan_pids), 30, "processes of the force-deleted Pod cleaned up")

    after = cpu.wait_pod(ns, "keep", ready, 30)
    st1 = cstatus(after, "web")
    assert st1["containerID"] == st0["containerID"]
    assert st1["state"]["running"]["startedAt"] == st0["state"]["running"]["startedAt"]
    assert st1["restartCount"] == 0
    assert all(alive(p) for p in pids), "the same processes kept running"

    # the new agent still tracks the container: kill its main process, it must be restarted
    main = max(pids, key=lambda p: open(f"/proc/{p}/cmdline", "rb").read().count(b"http.server"))
    os.kill(main, signal.SIGKILL)
    p = cpu.wait_pod(ns, "keep", lambda x: cstatus(x, "web").get("restartCount", 0) == 1, 60,
                     "restart after the adopted container died")
    assert cstatus(p, "web")["lastState"]["terminated"]["exitCode"] == 137
    cpu.wait_pod(ns, "keep", ready, 60)
    # and deletes it gracefully
    uid = p["metadata"]["uid"]
    cpu.delete_pod(ns, "keep")
    cpu.wait_gone(ns, "keep", 60)
    assert not pod_processes(uid)
    assert cpu.wait_pod(ns, "late", phase("Running"), 5)
