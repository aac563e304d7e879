"""Extended-resource devices (fake GPUs, TPUs, ...), obtained the way a kubelet obtains them: from device plugins.

Per node with devices (`gpus`, or `devices: {<resource>: <count>}`, in the cluster definition) the agent serves the
kubelet side of the device-plugin API (`clusters/local/devices.py: DeviceManager`) on
`<state>/device-plugins/<node>/kubelet.sock` and runs, per resource, the project's fake device plugin (`python -m
rayconformance.clusters.deviceplugin --resource <resource> --count <count>`) against it, as a process of its own
(`<state>/pids/deviceplugin-<node>[-<resource>].pid`, log under `<state>/logs/`; nvidia.com/gpu's name has no
resource part) - the stand-in for the plugin's DaemonSet Pod. Like that Pod it outlives an agent crash: the next
agent adopts it, and it registers again because the new manager replaced its sockets. If it exits, it is started
again after a back-off.

The Node's `nvidia.com/gpu` (or other resource) is what its plugin's ListAndWatch reports as healthy (0 until it
registers, 0 again while it is gone). Allocation asks the manager, which calls the plugin's Allocate and persists
the result (`<plugin dir>/allocations.json`), so an agent restart neither loses nor hands out twice a device in use.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Protocol

from kubernetes.utils.quantity import parse_quantity

from .. import procs
from ..section import LocalSection
from ..devices import DeviceError, DeviceManager, plugin_command
from ...deviceplugin.resources import GPU

log = logging.getLogger("nodeagent.devices")

PLUGIN_PROCESS = "deviceplugin"  # procs name prefix: deviceplugin-<node>
PLUGIN_MODULE = "rayconformance.clusters.deviceplugin"
PLUGIN_DIRS = "device-plugins"  # under the state dir
RESTART_BACKOFF = 5.0  # seconds a dead plugin stays down before it is started again
SUPERVISE_EVERY = 1.0
REPO = Path(__file__).resolve().parents[3]


class AdmissionError(RuntimeError):
    """Not enough devices: the Pod fails with reason UnexpectedAdmissionError, as with a kubelet."""


class DeviceSource(Protocol):
    resources: tuple[str, ...]

    def capacity(self, node: str) -> dict[str, int]: ...
    def allocate(self, node: str, pod_uid: str, container: str, count: int, resource: str = GPU) -> dict[str, str]: ...
    def release(self, pod_uid: str) -> None: ...
    def retain(self, node: str, pod_uids: Iterable[str]) -> None: ...


def plugin_dir(state: Path, node: str) -> Path:
    return Path(state) / PLUGIN_DIRS / node


def process_name(node: str, resource: str = GPU) -> str:
    """`deviceplugin-<node>` for nvidia.com/gpu, `deviceplugin-<node>-google.com-tpu` for google.com/tpu."""
    return f"{PLUGIN_PROCESS}-{node}" + ("" if resource == GPU else "-" + resource.replace("/", "-"))


class PluginDevices:
    """One DeviceManager per node with devices and one fake device plugin process per node and resource; routes by
    node."""

    def __init__(self, defn: LocalSection, state: Path, on_change: Callable[[str], None] | None = None,
                 restart_backoff: float = RESTART_BACKOFF):
        self.state = Path(state)
        self.counts = {n.name: dict(n.devices) for n in defn.nodes if n.devices}  # node -> resource -> count
        self.resources = tuple(sorted({r for c in self.counts.values() for r in c}))
        self.plugins = [(node, r) for node, c in self.counts.items() for r in c]
        self.on_change = on_change
        self.restart_backoff = restart_backoff
        self.managers = {node: DeviceManager(node, plugin_dir(self.state, node),
                                             on_change=lambda cap, node=node: self._changed(node))
                         for node in self.counts}
        self._stop = threading.Event()
        self._down_since: dict[tuple[str, str], float] = {}
        self._supervisor: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Serve Registration on every node with devices, then make sure its plugins run (adopting live ones)."""
        for m in self.managers.values():
            m.start()
        for node, resource in self.plugins:
            pid = self.plugin_pid(node, resource)
            if pid is None:
                self._spawn(node, resource)
            else:
                log.info("node %s: adopted the running device plugin for %s (pid %d); it registers again", node,
                         resource, pid)
        if self.managers:
            self._supervisor = threading.Thread(target=self._supervise, daemon=True, name="deviceplugins")
            self._supervisor.start()

    def wait_registered(self, timeout: float, stopping: threading.Event | None = None) -> list[str]:
        """Wait until every plugin has registered and listed its devices; the nodes still waiting."""
        deadline = time.monotonic() + timeout
        while True:
            waiting = sorted({n for n, r in self.plugins if not self.managers[n].devices(r)})
            if not waiting or time.monotonic() >= deadline or (stopping is not None and stopping.is_set()):
                return waiting
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the plugin processes, then the managers (no sockets left). Allocations stay on disk."""
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join()
            self._supervisor = None
        for node, resource in self.plugins:
            procs.stop(self.state, process_name(node, resource), grace=10)
        for m in self.managers.values():
            m.stop()

    # -- what the Pods and the Node ask --------------------------------------------------------------------
    def capacity(self, node: str) -> dict[str, int]:
        """Healthy devices per extended resource; a node shows each of its resources 0 until its plugin registers."""
        m = self.managers.get(node)
        return {} if m is None else {**dict.fromkeys(self.counts[node], 0), **m.capacity()}

    def allocate(self, node: str, pod_uid: str, container: str, count: int, resource: str = GPU) -> dict[str, str]:
        m = self.managers.get(node)
        if m is None:
            raise AdmissionError(f"Allocate failed due to no device plugin for {resource} on node {node}, "
                                 "which is unexpected")
        try:
            return m.allocate(pod_uid, container, resource, count)
        except DeviceError as e:
            raise AdmissionError(f"Allocate failed due to {e}, which is unexpected") from None

    def allocated(self, node: str, pod_uid: str) -> dict[str, dict[str, list[str]]]:
        m = self.managers.get(node)
        return {} if m is None else m.allocated(pod_uid)

    def release(self, pod_uid: str) -> None:
        for m in self.managers.values():
            m.release(pod_uid)

    def retain(self, node: str, pod_uids: Iterable[str]) -> None:
        """Only the given Pods (those bound to the node) keep devices; used after every (re)list."""
        m = self.managers.get(node)
        if m is not None:
            m.retain(pod_uids)

    # -- plugin processes ----------------------------------------------------------------------------------
    def plugin_pid(self, node: str, resource: str = GPU) -> int | None:
        """The pid of this node's running plugin for `resource` (checked by command line), or None."""
        f = self.state / "pids" / f"{process_name(node, resource)}.pid"
        try:
            pid = int(f.read_text())
        except (OSError, ValueError):
            return None
        if not procs.alive(pid):
            _reap(pid)
            return None
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        want = str(plugin_dir(self.state, node)).encode()
        return pid if PLUGIN_MODULE.encode() in cmd and want in cmd and resource.encode() in cmd else None

    def _spawn(self, node: str, resource: str) -> int:
        count = self.counts[node][resource]
        argv = plugin_command(node, count=count, plugin_dir=plugin_dir(self.state, node), resource=resource)
        pid = procs.spawn(self.state, process_name(node, resource), argv, cwd=REPO)
        log.info("node %s: started the fake device plugin (pid %d, %d x %s)", node, pid, count, resource)
        return pid

    def _supervise(self) -> None:
        while not self._stop.wait(SUPERVISE_EVERY):
            for plugin in self.plugins:
                node, resource = plugin
                if self._stop.is_set():
                    return
                if self.plugin_pid(node, resource) is not None:
                    self._down_since.pop(plugin, None)
                    continue
                now = time.monotonic()
                if plugin not in self._down_since:
                    self._down_since[plugin] = now
                    log.warning("node %s: the device plugin for %s is not running; starting it again in %.0fs "
                                "(log: %s)", node, resource, self.restart_backoff,
                                self.state / "logs" / f"{process_name(node, resource)}.log")
                if now - self._down_since[plugin] >= self.restart_backoff:
                    try:
                        self._spawn(node, resource)
                    except Exception:  # noqa: BLE001 - try again after the next back-off
                        log.exception("node %s: cannot start the device plugin for %s", node, resource)
                    self._down_since.pop(plugin, None)

    def _changed(self, node: str) -> None:
        if self.on_change is not None:
            self.on_change(node)


def _reap(pid: int) -> None:
    """Collect a dead plugin that is our child (no zombie); adopted ones are not ours to wait for."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def requested(ctr: dict, resource: str) -> int:
    res = ctr.get("resources") or {}
    q = (res.get("limits") or {}).get(resource) or (res.get("requests") or {}).get(resource)
    return int(parse_quantity(str(q))) if q else 0
