"""Faults the local test bed can inject into its own Pods (the `local` provider's capabilities use them).

The bed knows where a Pod's network namespace is (the node agent names it after the Pod's UID), so a
real network failure can be made inside it: every packet but loopback dropped, established TCP connections
aborted, as a broken link or a dead node would do to a client.
"""
from __future__ import annotations

import subprocess

from .nodeagent.sandbox import NETNS_PREFIX, short


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
