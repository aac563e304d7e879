"""The node agent process: wires Nodes, Pod watches, workers, the log servers, and re-adoption after a restart.

Restart semantics: SIGKILL (a crash) leaves every Pod running; the next agent reads the Pod records from
`<state>/nodeagent/pods/`, and for each Pod still bound to its Node re-attaches to the live processes (checked by
pid and start time), picks up exits that happened meanwhile from the shim's exit file, and carries on (restart
counts, container IDs and start times unchanged). Records of Pods that vanished meanwhile are cleaned up, and their
devices released. The device plugins (see `devices`) survive a crash and are adopted.
SIGTERM/SIGINT is a shutdown: every Pod process is killed, every sandbox removed, the device plugins stopped.
"""
from __future__ import annotations

import datetime as dt
import logging
import signal
import threading
from pathlib import Path

from . import devices, logs, security
from .events import EventRecorder
from .images import Images
from .kube import Kube
from .node import NodeManager, capacity, kubelet_port
from .podwatch import PodWatch
from .podworker import PodWorker
from .sandbox import Network, Sandbox
from .containers import Proc
from .status import TERMINAL
from .store import Store
from .volumes import Tokens, Volumes
from ..section import LocalSection, NodeDef

log = logging.getLogger("nodeagent")
# Directories that had to be created on the host's own tree for a mount target (see cinit.py); teardown
# removes them. Kept outside the state dir so a lost state dir does not lose it.
HOST_PATHS_REGISTRY = Path("/var/lib/rayconformance/nodeagent-host-paths")
DEVICE_PLUGIN_WAIT = 30.0  # seconds to wait for the device plugins before starting Pods


class Agent:
    def __init__(self, defn: LocalSection, state: Path):
        self.defn, self.state = defn, state
        self.kube = Kube(state / "admin.kubeconfig")
        self.store = Store(state)
        self.pods_dir = state / "pods"
        self.pods_dir.mkdir(parents=True, exist_ok=True)
        self.registry = HOST_PATHS_REGISTRY
        self.net = Network(defn, self.store)
        self.devices: devices.DeviceSource = devices.PluginDevices(defn, state, on_change=self._devices_changed)
        self.images = Images(defn)
        self.host_caps = security.host_caps()  # what a container can be given
        self.volumes = Volumes(self.kube, Tokens(self.kube))
        self.workers: dict[str, PodWorker] = {}
        self.records = self.store.pod_records()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.started_at_rfc = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.nodes: list[NodeManager] = []
        self.watches: list[PodWatch] = []
        self.log_servers: list[logs.LogServer] = []
        self.events = EventRecorder(self.kube)

    # -- lifecycle ----------------------------------------------------------------------------------------
    def run(self) -> None:
        self.net.ensure_bridges()
        for n in self.defn.nodes:
            srv = logs.LogServer(self, n.name, self.defn.host_address, kubelet_port(n), self.state / "pki")
            srv.start()
            self.log_servers.append(srv)
        threading.Thread(target=self.events.run, daemon=True, name="events").start()
        self.nodes = [NodeManager(self, n) for n in self.defn.nodes]  # before the plugins report capacity
        try:
            self.devices.start()
        except BaseException:
            self.devices.stop()
            raise
        for m in self.nodes:
            m.start()
        for m in self.nodes:
            while not m.registered.wait(1):
                if self.stopping.is_set():
                    return self.shutdown()
        # Pods bound while the agent was down are admitted only once the plugins have (re-)registered
        waiting = self.devices.wait_registered(DEVICE_PLUGIN_WAIT, self.stopping)
        if waiting:
            log.warning("device plugins of %s have not registered after %ss; Pods there needing devices fail "
                        "admission until they do", ", ".join(waiting), DEVICE_PLUGIN_WAIT)
        for n in self.defn.nodes:
            w = PodWatch(self, n)
            w.start()
            self.watches.append(w)
        log.info("node agent up: %d node(s), %d Pod record(s) to re-adopt", len(self.defn.nodes), len(self.records))
        self.stopping.wait()
        self.shutdown()

    def shutdown(self) -> None:
        with self.lock:
            workers = list(self.workers.values())
        ts = [threading.Thread(target=w.shutdown, daemon=True) for w in workers]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        for rec in list(self.records.values()):
            self.cleanup_record(rec)
        self.devices.stop()
        for s in self.log_servers:
            s.stop()
        log.info("node agent stopped; %d Pod(s) killed", len(workers))

    # -- Pods -----------------------------------------------------------------------------------------------
    def dispatch(self, node: NodeDef, typ: str, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        with self.lock:
            if self.stopping.is_set():
                return
            w = self.workers.get(uid)
            if typ == "DELETED":
                if w is not None:
                    w.update(pod)
                    w.deleted()
                elif uid in self.records:
                    rec = self.records.pop(uid)
                    threading.Thread(target=self.cleanup_record, args=(rec,), daemon=True).start()
                return
            if w is not None:
                w.update(pod)
                return
            rec = self.records.pop(uid, None)
            w = PodWorker(self, node, pod, rec)
            if rec is None and (pod.get("status") or {}).get("phase") in TERMINAL:
                w.foreign = True  # finished before we knew it: only see to its deletion, never rewrite status
            self.workers[uid] = w
            w.start()

    def resync_node(self, node: NodeDef, seen: set[str]) -> None:
        """After a (re)list: Pods no longer bound here are gone; records of vanished Pods are orphans."""
        with self.lock:
            gone = [w for uid, w in self.workers.items() if w.node.name == node.name and uid not in seen]
            orphans = [self.records.pop(uid) for uid, rec in list(self.records.items())
                       if rec.get("node") == node.name and uid not in seen]
        self.devices.retain(node.name, seen)  # devices of Pods deleted while we were not watching come back
        for w in gone:
            w.deleted()
        for rec in orphans:
            log.info("cleaning up %s/%s: gone while the agent was down", rec.get("namespace"), rec.get("name"))
            self.cleanup_record(rec)

    def cleanup_record(self, rec: dict) -> None:
        """Kill and remove a Pod known only from its record."""
        uid = rec["uid"]
        for c in (rec.get("containers") or {}).values():
            if c.get("proc"):
                p = Proc.from_dict(c["proc"])
                p.kill()
                p.wait(5)
        sb = Sandbox(self.pods_dir / uid, uid, rec.get("sandbox"))
        sb.destroy(self.net)
        sb.remove_files()
        self.devices.release(uid)
        self.store.drop_pod(uid)

    def forget(self, w: PodWorker) -> None:
        with self.lock:
            if self.workers.get(w.uid) is w:
                del self.workers[w.uid]

    def find_pod(self, ns: str, name: str, node: str | None = None) -> PodWorker | None:
        with self.lock:
            for w in self.workers.values():
                if w.ns == ns and w.name == name and (node is None or w.node.name == node) and not w.gone:
                    return w
        return None

    def allocatable(self, node: NodeDef) -> dict:
        return capacity(node, self.devices.capacity(node.name))

    def _devices_changed(self, node: str) -> None:
        """A device plugin's healthy devices changed: post the Node's status now."""
        for m in self.nodes:
            if m.node.name == node:
                m.changed.set()

    # -- events ---------------------------------------------------------------------------------------------
    def event(self, pod: dict, node: str, etype: str, reason: str, message: str, fieldpath: str | None) -> None:
        self.events.record(pod, node, etype, reason, message, fieldpath)


def main(defn: LocalSection, state: Path) -> None:
    agent = Agent(defn, state)

    def stop(signum, frame):  # noqa: ARG001
        agent.stopping.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    agent.run()
