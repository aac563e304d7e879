"""Bring-up and teardown of one local test-bed cluster, in dependency order.

    network guard -> certificates -> etcd -> apiserver -> controller-manager, scheduler
    -> CoreDNS -> node agent (Nodes Ready) -> kube-proxy

Teardown is idempotent and runs before every bring-up, so a crashed earlier run never poisons the next.
Only one test bed runs on a machine at a time (fixed ports and addresses); a lock file (a filelock.FileLock)
enforces it.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from . import controlplane, network, procs, section
from ..definition import ClusterDefinition
from ..toolcache import CACHE
from .nodeagent.sandbox import MARKER as POD_MARKER
from .paths import LOCK_FILE, STATE_ROOT, cache_problem, state_dir


@dataclass
class BringUp:
    kubeconfig: Path
    seconds: float
    phases: dict[str, float]


class TestBed:
    __test__ = False  # not a pytest test class
    _holder: "TestBed | None" = None  # the instance of this process that holds the machine-wide lock

    def __init__(self, defn: ClusterDefinition):
        self.defn = section.of(defn)  # a one-line error for another provider's definition
        self.state = state_dir(defn.name)
        self._held: FileLock | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    def _lock(self, wait: float | None = None) -> None:
        """Take the machine-wide test-bed lock, waiting up to `wait` seconds (RAYCONF_LOCK_WAIT, else 0)."""
        if TestBed._holder is not None and TestBed._holder is not self:
            raise controlplane.ControlPlaneError(
                f"this process already runs test bed '{TestBed._holder.defn.name}'; take it down first")
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        wait = float(os.environ.get("RAYCONF_LOCK_WAIT", "0")) if wait is None else wait
        wait = max(wait, 0.0)  # filelock waits without end on a negative timeout; here it means: do not wait
        lock = FileLock(LOCK_FILE, thread_local=False)  # down() may run in another thread than up()
        try:
            lock.acquire(timeout=wait, poll_interval=1)
        except Timeout:
            raise controlplane.ControlPlaneError(
                f"another local test bed is running on this machine (lock {LOCK_FILE} is held); "
                "wait for it to finish (or set RAYCONF_LOCK_WAIT=<seconds>)") from None
        self._held = lock
        TestBed._holder = self

    def up(self, nodes: bool = True) -> BringUp:
        """Start everything; with nodes=False only the control plane (issue-3 scope)."""
        if os.geteuid() != 0:
            raise controlplane.ControlPlaneError("the local provider needs root (network namespaces, iptables)")
        problem = cache_problem()
        if problem:
            raise controlplane.ControlPlaneError(problem)
        self._lock()
        self.down(unlock=False)
        phases: dict[str, float] = {}
        t0 = time.monotonic()

        def phase(name: str, fn, *a):
            t = time.monotonic()
            out = fn(*a)
            phases[name] = round(time.monotonic() - t, 2)
            return out

        try:
            self.state.mkdir(parents=True, exist_ok=True)
            d = self.defn
            phase("network", network.up, d.host_address, d.dns_address, d.pod_cidr, d.service_cidr)
            phase("control-plane", controlplane.start, d, self.state)
            if nodes:
                from . import dns, nodes as node_side, proxy, storage
                phase("dns", dns.start, d, self.state)
                phase("nodes", node_side.start, d, self.state)
                phase("kube-proxy", proxy.start, d, self.state)
                phase("storage", storage.start, d, self.state)  # default StorageClass (not waited for)
        except BaseException:
            self.down()
            raise
        return BringUp(self.kubeconfig, round(time.monotonic() - t0, 2), phases)

    def down(self, unlock: bool = True) -> None:
        """Stop all processes, remove network state, mounts and the state dir. Safe to call any time.

        Refuses (ControlPlaneError) while another process holds the test-bed lock: never tear down a test bed
        somebody else is using. A crashed run's lock is free, so its leftovers are cleaned.
        """
        if self._held is None:
            self._lock(wait=0)
        from . import nodes as node_side, proxy

        # one test bed per machine: whatever definition a crashed run used, its leftovers go too
        states = {self.state} | ({p for p in STATE_ROOT.iterdir() if p.is_dir()} if STATE_ROOT.is_dir() else set())
        for state in sorted(states, key=lambda p: p != self.state):
            proxy.stop(self.defn, state)
            node_side.stop(self.defn, state)
            procs.stop_all(state, ["coredns", *controlplane.COMPONENTS])
        procs.kill_strays([CACHE], (procs.BED_MARKER, POD_MARKER))
        network.down()
        for state in states:
            shutil.rmtree(state, ignore_errors=True)
        if unlock and self._held is not None:
            self._held.release()
            self._held = None
            TestBed._holder = None
