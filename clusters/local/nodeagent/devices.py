"""Extended-resource devices (fake GPUs), obtained the way a kubelet obtains them: from a device plugin.

Per GPU node (`gpus` > 0 in the cluster definition) the agent serves the kubelet side of the device-plugin API
(`clusters/local/devices.py: DeviceManager`) on `<state>/device-plugins/<node>/kubelet.sock` and runs the
project's fake device plugin (`python -m rayconformance.clusters.deviceplugin --count <gpus>`) against it, as a process of its
own (`<state>/pids/deviceplugin-<node>.pid`, log `<state>/logs/deviceplugin-<node>.log`) - the stand-in for the
plugin's DaemonSet Pod. Like that Pod it outlives an agent crash: the next agent adopts it, and it registers again
because the new manager replaced its sockets. If it exits, it is started again after a back-off.

The Node's `nvidia.com/gpu` is what the plugin's ListAndWatch reports as healthy (0 until it registers, 0 again
while it is gone). Allocation asks the manager, which calls the plugin's Allocate and persists the result
(`<plugin dir>/allocations.json`), so an agent restart neither loses nor hands out twice a device in use.
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

log = logging.getLogger("nodeagent.devices")

GPU = "nvidia.com/gpu"
PLUGIN_PROCESS = "deviceplugin"  # procs name prefix: deviceplugin-<node>
PLUGIN_MODULE = "rayconformance.clusters.deviceplugin"
PLUGIN_DIRS = "device-plugins"  # under the state dir
RESTART_BACKOFF = 5.0  # seconds a dead plugin stays down before it is started again
SUPERVISE_EVERY = 1.0
REPO = Path(__file__).resolve().parents[3]


class AdmissionError(RuntimeError):
    """Not enough devices: the Pod fails with reason UnexpectedAdmissionError, as with a kubelet."""


class DeviceSource(Protocol):
    resource: str

    def capacity(self, node: str) -> dict[str, int]: ...
    def allocate(self, node: str, pod_uid: str, container: str, count: int) -> dict[str, str]: ...
    def release(self, pod_uid: str) -> None: ...
    def retain(self, node: str, pod_uids: Iterable[str]) -> None: ...


def plugin_dir(state: Path, node: str) -> Path:
    return Path(state) / PLUGIN_DIRS / node


def process_name(node: str) -> str:
    return f"{PLUGIN_PROCESS}-{node}"


class PluginDevices:
    """One DeviceManager and one fake device plugin process per GPU node; routes by node."""

    resource = GPU

    def __init__(self, defn: LocalSection, state: Path, on_change: Callable[[str], None] | None = None,
                 restart_backoff: float = RESTART_BACKOFF):
        self.state = Path(state)
        self.counts = {n.name: n.gpus for n in defn.nodes if n.gpus}
        self.on_change = on_change
        self.restart_backoff = restart_backoff
        self.managers = {node: DeviceManager(node, plugin_dir(self.state, node),
                                             on_change=lambda cap, node=node: self._changed(node))
                         for node in self.counts}
        self._stop = threading.Event()
        self._down_since: dict[str, float] = {}
        self._supervisor: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Serve Registration on every GPU node, then make sure its plugin runs (adopting a live one)."""
        for node, m in self.managers.items():
            m.start()
            pid = self.plugin_pid(node)
            if pid is None:
                self._spawn(node)
            else:
                log.info("node %s: adopted the running device plugin (pid %d); it registers again", node, pid)
        if self.managers:
            self._supervisor = threading.Thread(target=self._supervise, daemon=True, name="deviceplugins")
            self._supervisor.start()

    def wait_registered(self, timeout: float, stopping: threading.Event | None = None) -> list[str]:
        """Wait until every GPU node's plugin has registered and listed its devices; the nodes still waiting."""
        deadline = time.monotonic() + timeout
        while True:
            waiting = [n for n, m in self.managers.items() if not m.devices(self.resource)]
            if not waiting or time.monotonic() >= deadline or (stopping is not None and stopping.is_set()):
                return waiting
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the plugin processes, then the managers (no sockets left). Allocations stay on disk."""
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join()
            self._supervisor = None
        for node in self.counts:
            procs.stop(self.state, process_name(node), grace=10)
        for m in self.managers.values():
            m.stop()

    # -- what the Pods and the Node ask --------------------------------------------------------------------
    def capacity(self, node: str) -> dict[str, int]:
        """Healthy devices per extended resource; a GPU node shows nvidia.com/gpu 0 until its plugin registers."""
        m = self.managers.get(node)
        return {} if m is None else {self.resource: 0, **m.capacity()}

    def allocate(self, node: str, pod_uid: str, container: str, count: int) -> dict[str, str]:
        m = self.managers.get(node)
        if m is None:
            raise AdmissionError(f"Allocate failed due to no device plugin for {self.resource} on node {node}, "
                                 "which is unexpected")
        try:
            return m.allocate(pod_uid, container, self.resource, count)
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
    def plugin_pid(self, node: str) -> int | None:
        """The pid of this node's running plugin (checked by command line), or None."""
        f = self.state / "pids" / f"{process_name(node)}.pid"
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
        return pid if PLUGIN_MODULE.encode() in cmd and want in cmd else None

    def _spawn(self, node: str) -> int:
        argv = plugin_command(node, count=self.counts[node], plugin_dir=plugin_dir(self.state, node))
        pid = procs.spawn(self.state, process_name(node), argv, cwd=REPO)
        log.info("node %s: started the fake device plugin (pid %d, %d x %s)", node, pid, self.counts[node],
                 self.resource)
        return pid

    def _supervise(self) -> None:
        while not self._stop.wait(SUPERVISE_EVERY):
            for node in self.counts:
                if self._stop.is_set():
                    return
                if self.plugin_pid(node) is not None:
                    self._down_since.pop(node, None)
                    continue
                now = time.monotonic()
                if node not in self._down_since:
                    self._down_since[node] = now
                    log.warning("node %s: the device plugin is not running; starting it again in %.0fs "
                                "(log: %s)", node, self.restart_backoff,
                                self.state / "logs" / f"{process_name(node)}.log")
                if now - self._down_since[node] >= self.restart_backoff:
                    try:
                        self._spawn(node)
                    except Exception:  # noqa: BLE001 - try again after the next back-off
                        log.exception("node %s: cannot start the device plugin", node)
                    self._down_since.pop(node, None)

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
