"""Faults the local test bed can inject into its own Pods (the `local` provider's capabilities use them).

The bed knows where a Pod's network namespace is (the node agent names it after the Pod's UID), so a
real network failure can be made inside it: every packet but loopback dropped, established TCP connections
aborted, as a broken link or a dead node would do to a client. It also knows each running container's PID 1 (the
node agent's record of the Pod), so a container can be killed as a runtime's stop without grace does.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from .nodeagent import procutil
from .nodeagent.sandbox import NETNS_PREFIX, short
from .nodeagent.store import read_json


def pod_netns(pod_uid: str) -> str:
    return NETNS_PREFIX + short(pod_uid)


def cut_pod_network(pod_uid: str, pod_name: str) -> None:
    ns = pod_netns(pod_uid)
    for argv in (["iptables", "-w", "-I", "INPUT", "!", "-i", "lo", "-j", "DROP"],
                 ["iptables", "-w", "-I", "OUTPUT", "!", "-o", "lo", "-j", "DROP"],
                 ["ss", "-K", "state", "established"]):
        r = subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"cutting the network of Pod {pod_name} ({ns}): {' '.join(argv)}: {r.stderr.strip()}")


def kill_container(state: Path, pod_uid: str, pod_name: str, container: str) -> None:
    """SIGKILL the PID 1 of a running container of a Pod on the bed whose state directory is `state`: the whole
    container dies with it, the node agent records exit code 137 and applies the restart policy."""
    record = read_json(state / "nodeagent" / "pods" / f"{pod_uid}.json") or {}
    proc = ((record.get("containers") or {}).get(container) or {}).get("proc") or {}
    pid, start = proc.get("pid1"), proc.get("pid1_start")
    if not procutil.same_process(pid, start):
        raise RuntimeError(f"container {container} of Pod {pod_name} is not running on the local test bed "
                           f"(no live PID 1 in the node agent's record of the Pod)")
    procutil.kill(pid)
