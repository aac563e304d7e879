"""Node side of the local test bed: the node agent process (all Nodes of a definition) and its cleanup.

`start` launches the agent and waits until every Node is Ready and schedulable, and every node with devices shows
them (`nvidia.com/gpu`, ...: the agent runs a fake device plugin per node and resource, see `nodeagent/devices.py`).
`stop` stops it (SIGTERM: the agent kills every Pod, removes every sandbox and stops the device plugins), stops
device plugins a crashed agent left, then sweeps anything of ours that is still on the host, without relying on
the state dir (a crashed run may have lost it): processes carrying the Pod marker env var, agent and device-plugin processes,
`rc-*` network namespaces, `rcv*`/`rcbr*` links, mounts under the state root or /run/netns, device-plugin
sockets under the state root, and directories the agent had to create on the host for mount targets.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import procs
from .section import LocalSection
from .nodeagent.agent import HOST_PATHS_REGISTRY
from .nodeagent.devices import PLUGIN_DIRS, PLUGIN_MODULE, PLUGIN_PROCESS
from .nodeagent.sandbox import BRIDGE_PREFIX, MARKER, NETNS_PREFIX, VETH_PREFIX
from .paths import STATE_ROOT

AGENT = "nodeagent"
REPO = Path(__file__).resolve().parent.parent.parent


class NodesError(RuntimeError):
    pass


def start_agent(defn: LocalSection, state: Path) -> int:
    return procs.spawn(state, AGENT, [sys.executable, "-m", "rayconformance.clusters.local.nodeagent", "--cluster", str(defn.path),
                                      "--state", str(state)], cwd=REPO)


def agent_pid(state: Path) -> int | None:
    f = state / "pids" / f"{AGENT}.pid"
    return int(f.read_text()) if f.exists() else None


def wait_ready(defn: LocalSection, state: Path, timeout: float = 120.0) -> None:
    from .nodeagent.kube import Kube
    kube = Kube(state / "admin.kubeconfig")
    want = {n.name for n in defn.nodes}
    devices = {n.name: n.devices for n in defn.nodes if n.devices}

    def probe():
        try:
            items = kube.get("/api/v1/nodes").get("items", [])
        except Exception as e:  # noqa: BLE001
            return False, str(e)
        ready = set()
        for n in items:
            conds = {c["type"]: c["status"] for c in n.get("status", {}).get("conditions") or []}
            taints = [t["key"] for t in n.get("spec", {}).get("taints") or []]
            name = n["metadata"]["name"]
            shown = n.get("status", {}).get("allocatable") or {}
            if conds.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints \
                    and all(int(shown.get(r, 0)) >= c for r, c in devices.get(name, {}).items()):
                ready.add(name)
        last = f"ready: {sorted(ready)}, waiting for {sorted(want - ready)}"
        if devices.keys() & (want - ready):
            last += (f" (nodes with devices wait for them from their device plugins; see "
                     f"{state}/logs/{PLUGIN_PROCESS}-*.log)")
        return want <= ready, last

    procs.wait_started(state, AGENT, probe, timeout, 0.25, NodesError, "Nodes not Ready")


def start(defn: LocalSection, state: Path) -> None:
    start_agent(defn, state)
    wait_ready(defn, state)


def stop(defn: LocalSection | None, state: Path) -> list[str]:
    """Stop the agent (it kills all Pods and stops its device plugins), then the device plugins a crashed agent
    left, then sweep leftovers. Idempotent; returns what the sweep removed."""
    procs.stop(state, AGENT, grace=45)
    for f in sorted((state / "pids").glob(f"{PLUGIN_PROCESS}-*.pid")):
        procs.stop(state, f.stem)
    removed = sweep()
    if (state / PLUGIN_DIRS).is_dir():
        shutil.rmtree(state / PLUGIN_DIRS, ignore_errors=True)
    return removed


def _sh(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True)


def _our_processes() -> list[int]:
    marker = MARKER.encode() + b"="
    commands = (b"rayconformance.clusters.local.nodeagent", PLUGIN_MODULE.encode())
    me = os.getpid()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            env = (d / "environ").read_bytes()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if any(v.startswith(marker) for v in env.split(b"\0")) or (
                any(c in cmd for c in commands) and str(STATE_ROOT).encode() in cmd):
            out.append(int(d.name))
    return out


def sweep() -> list[str]:
    removed: list[str] = []
    # processes: Pod processes (marker env) and stray agents; netns members
    for _ in range(3):
        pids = _our_processes()
        for ns in _sh("ip", "netns", "list").stdout.split("\n"):
            name = ns.split(" ")[0]
            if name.startswith(NETNS_PREFIX):
                pids += [int(p) for p in _sh("ip", "netns", "pids", name).stdout.split()]
        if not pids:
            break
        for p in set(pids):
            try:
                os.kill(p, 9)
                removed.append(f"process {p}")
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.2)
    for ns in _sh("ip", "netns", "list").stdout.split("\n"):
        name = ns.split(" ")[0]
        if name.startswith(NETNS_PREFIX):
            _sh("ip", "netns", "del", name)
            removed.append(f"netns {name}")
    for line in _sh("ip", "-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith((VETH_PREFIX, BRIDGE_PREFIX)):
            _sh("ip", "link", "del", name)
            removed.append(f"link {name}")
    removed += _unmount_ours()
    removed += _remove_host_paths()
    for sock in _plugin_sockets():
        sock.unlink(missing_ok=True)
        removed.append(f"socket {sock}")
    return removed


def _plugin_sockets() -> list[Path]:
    """Device-plugin sockets (the agent's Registration socket and the plugins') under the state root."""
    return sorted(p for p in STATE_ROOT.glob(f"*/{PLUGIN_DIRS}/*/*") if p.is_socket())


def _mountpoints() -> list[str]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mp = line.split()[4].encode().decode("unicode_escape")
        out.append(mp)
    return out


def _unmount_ours() -> list[str]:
    removed = []
    state_root = str(STATE_ROOT).rstrip("/") + "/"
    for mp in sorted(set(_mountpoints()), key=len, reverse=True):
        if mp.startswith(state_root) or mp.startswith(f"/run/netns/{NETNS_PREFIX}"):
            _sh("umount", "-l", mp)
            removed.append(f"mount {mp}")
    netns_dir = Path("/run/netns")
    # `ip netns add` turns /run/netns into a mount point; drop it again once no namespace is left in it
    if "/run/netns" in _mountpoints() and netns_dir.is_dir() and not any(netns_dir.iterdir()):
        _sh("umount", "/run/netns")
        removed.append("mount /run/netns")
    return removed


def _remove_host_paths() -> list[str]:
    if not HOST_PATHS_REGISTRY.exists():
        return []
    removed = []
    paths = [p for p in HOST_PATHS_REGISTRY.read_text().splitlines() if p.strip()]
    for p in sorted(set(paths), key=lambda x: x.count("/"), reverse=True):
        path = Path(p)
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only if empty: never remove content we did not create
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()
            else:
                continue
            removed.append(f"host path {p}")
        except OSError:
            pass
    HOST_PATHS_REGISTRY.unlink(missing_ok=True)
    try:
        HOST_PATHS_REGISTRY.parent.rmdir()  # /var/lib/rayconformance, if nothing else lives there
    except OSError:
        pass
    return removed


def leftovers() -> list[str]:
    """What of the node side is still on the host (processes, netns, links, mounts, device-plugin sockets)."""
    out = [f"process {p}" for p in _our_processes()]
    for ns in _sh("ip", "netns", "list").stdout.split("\n"):
        if ns.startswith(NETNS_PREFIX):
            out.append(f"netns {ns.split(' ')[0]}")
    for line in _sh("ip", "-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith((VETH_PREFIX, BRIDGE_PREFIX)):
            out.append(f"link {name}")
    state_root = str(STATE_ROOT).rstrip("/") + "/"
    out += [f"mount {m}" for m in _mountpoints() if m.startswith(state_root) or m.startswith("/run/netns")]
    out += [f"socket {p}" for p in _plugin_sockets()]
    return out
