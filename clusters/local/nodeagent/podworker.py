"""The Pod worker: one thread per Pod bound to our Nodes, reconciling it on every wake-up.

A wake-up is a watch event, a container exit, a probe result or a timer. Each pass: exits -> termination, if
the Pod is being deleted (`termination`) -> admission (devices) -> activeDeadlineSeconds -> sandbox -> volumes
-> containers (`runtime`) -> probe kills and readiness (`probemanager`) -> phase -> status (`statusmanager`) ->
the Pod's record, which holds everything a restarted agent needs to re-adopt the running containers.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from . import containers, devices, env as envmod, security
from .kube import ApiError
from .probemanager import ProberManager
from .restart import RESYNC, RETRY
from .runtime import ContainerRuntime
from .sandbox import Sandbox, SandboxError
from .status import TERMINAL, CState, Conditions, compute_phase, waiting
from .statusmanager import StatusManager
from .termination import Termination
from .volumes import VolumeError

log = logging.getLogger("nodeagent.pods")
VOLUME_REFRESH = 60.0  # volumes are set up again this often (new tokens, changed ConfigMaps and Secrets)


class PodWorker(ContainerRuntime, Termination, ProberManager, StatusManager):
    def __init__(self, agent, node, pod: dict, record: dict | None = None):
        self.agent, self.node, self.pod = agent, node, pod
        md = pod["metadata"]
        self.uid, self.ns, self.name = md["uid"], md["namespace"], md["name"]
        self.dir: Path = agent.pods_dir / self.uid
        rec = record or {}
        self.adopting = record is not None
        self.sandbox = Sandbox(self.dir, self.uid, rec.get("sandbox"))
        self.phase = rec.get("phase", "Pending")
        self.reason, self.message = rec.get("reason"), rec.get("message")
        self.start_time = rec.get("start_time")
        self.admitted = rec.get("admitted", False)
        self.final_deleted = rec.get("final_deleted", False)
        self.conds = Conditions(rec.get("conditions"))
        saved = rec.get("containers") or {}
        self.ctrs: dict[str, CState] = {}
        for kind, c in self.spec_containers():
            self.ctrs[c["name"]] = (CState.from_record(saved[c["name"]]) if c["name"] in saved
                                    else CState(c["name"], kind, c.get("image", "")))
        self.cond = threading.Condition()
        self.wake = True
        self.gone = False        # the object is gone from the API
        self.stopping = False    # agent shutdown
        self.exits: list[tuple[str, int]] = []
        self.probers: dict[str, list] = {}
        self.probe_state: dict[str, dict] = {}
        self.killing: set[str] = set()
        self.term_deadline: float | None = None
        self.volume_paths: dict[str, str] | None = None
        self.volumes_at = 0.0
        self.next_wake = 0.0
        self.last_sent: dict | None = None
        self.done = threading.Event()
        self.foreign = False     # a terminal Pod we never ran (no record): leave its status alone
        self.completing = False  # every app container is done: stop sidecars, then go terminal
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"pod-{self.ns}/{self.name}")

    def spec_containers(self):
        spec = self.pod["spec"]
        for c in spec.get("initContainers") or []:
            yield ("sidecar" if c.get("restartPolicy") == "Always" else "init"), c
        for c in spec.get("containers") or []:
            yield "app", c

    def spec_of(self, name: str) -> dict:
        return next(c for _, c in self.spec_containers() if c["name"] == name)

    @property
    def inits(self) -> list[CState]:
        return [c for c in self.ctrs.values() if c.kind in ("init", "sidecar")]

    @property
    def apps(self) -> list[CState]:
        return [c for c in self.ctrs.values() if c.kind == "app"]

    @property
    def policy(self) -> str:
        return self.pod["spec"].get("restartPolicy") or "Always"

    @property
    def own_policies(self) -> dict[str, str]:
        """The app containers that set a restartPolicy of their own (container restart rules), by name."""
        return {c["name"]: c["restartPolicy"] for c in self.pod["spec"].get("containers") or []
                if c.get("restartPolicy")}

    def event(self, etype: str, reason: str, message: str, fieldpath: str | None = None) -> None:
        self.agent.event(self.pod, self.node.name, etype, reason, message, fieldpath)

    def kick(self) -> None:
        with self.cond:
            self.wake = True
            self.cond.notify()

    def start(self) -> None:
        self.thread.start()

    # -- inputs from other threads ----------------------------------------------------------------------
    def update(self, pod: dict) -> None:
        self.pod = pod
        self.kick()

    def deleted(self) -> None:
        self.gone = True
        self.kick()

    def _on_exit(self, name: str, proc: containers.Proc) -> None:
        with self.cond:
            self.exits.append((name, proc.run))
            self.wake = True
            self.cond.notify()

    # -- the sync loop --------------------------------------------------------------------------------------
    def _run(self) -> None:
        if self.adopting:
            try:
                self._adopt()
            except Exception:  # noqa: BLE001
                log.exception("%s/%s: adoption failed", self.ns, self.name)
        while True:
            with self.cond:
                if not self.wake:
                    self.cond.wait(timeout=max(0.05, self.next_wake - time.time()))
                self.wake = False
            if self.stopping:
                break
            try:
                if self._sync():
                    break
            except Exception:  # noqa: BLE001 - keep the Pod alive; retry
                log.exception("%s/%s: sync failed", self.ns, self.name)
                self.next_wake = time.time() + RETRY
        self.done.set()
        self.agent.forget(self)

    def _adopt(self) -> None:
        """Re-attach to a Pod's processes after an agent restart (from the saved record)."""
        for c in self.ctrs.values():
            p = c.proc
            if p is None or not c.is_running:
                continue
            if p.alive():
                containers.Waiter(p, lambda pr, n=c.name: self._on_exit(n, pr)).start()
                self._start_probers(c, adopted=True)
            else:
                self.exits.append((c.name, p.run))
        log.info("%s/%s: adopted (sandbox %s)", self.ns, self.name,
                 "alive" if self.sandbox.alive() else "gone")

    def _sync(self) -> bool:
        """One reconcile pass; True when the worker is finished."""
        now = time.time()
        self.next_wake = now + RESYNC
        self._handle_exits(now)
        if self.gone:
            self._kill_everything()
            self._cleanup()
            return True
        api_phase = (self.pod.get("status") or {}).get("phase")
        if api_phase in TERMINAL and self.phase not in TERMINAL:
            self.phase = api_phase
        if self.pod["metadata"].get("deletionTimestamp"):
            return self._sync_deleting(now)
        self._sync_pod(now)
        self._push_status(now)
        self._save()
        return False

    def _sync_pod(self, now: float) -> None:
        """Move a Pod that is not being deleted towards its spec, up to its phase."""
        if self.phase in TERMINAL:
            self._finish_terminal()
            return
        if not self.admitted and not self._admit():
            return
        ads = self.pod["spec"].get("activeDeadlineSeconds")
        if ads is not None and self.start_time and now >= self.start_time + float(ads):
            self.reason = "DeadlineExceeded"
            self.message = "Pod was active on the node longer than the specified deadline"
            self.event("Normal", "DeadlineExceeded", self.message)
            self._kill_everything()
            self.phase = "Failed"
            self._finish_terminal()
            return
        if not self._ensure_sandbox(now) or not self._ensure_volumes(now):
            return
        self._run_containers(now)
        self._apply_probe_kills()
        self._update_readiness()
        phase = compute_phase(self.policy, self.inits, self.apps, own_policies=self.own_policies)
        if phase in TERMINAL:
            self.completing = True  # no more restarts (sidecars included)
            running_left = [c for c in self.ctrs.values() if c.proc and c.proc.alive()]
            if running_left:  # sidecars still up: stop them first, report terminal afterwards
                for c in running_left:
                    self._kill_container(c, self._grace())
                phase = self.phase
        self.phase = phase
        if self.phase in TERMINAL:
            self._finish_terminal()

    # -- admission, sandbox, volumes ---------------------------------------------------------------------
    def _admit(self) -> bool:
        src = self.agent.devices
        try:
            for c in self.ctrs.values():
                for resource in src.resources:
                    n = devices.requested(self.spec_of(c.name), resource)
                    if n:
                        c.devices = {**c.devices, **src.allocate(self.node.name, self.uid, c.name, n, resource)}
        except devices.AdmissionError as e:
            src.release(self.uid)
            for c in self.ctrs.values():
                c.devices = {}
            self.phase, self.reason, self.message = "Failed", "UnexpectedAdmissionError", str(e)
            self.event("Warning", "UnexpectedAdmissionError", str(e))
            return False
        self.admitted = True
        unhonored = security.not_honored(self.pod, self.agent.host_caps)
        if unhonored:
            self.event("Warning", "NotHonored", "the local test bed's node agent does not honor: "
                       + "; ".join(unhonored)[:850] + " (clusters/local/nodeagent/README.md, known deviations)")
        return True

    def _ensure_sandbox(self, now: float) -> bool:
        if self.sandbox.alive():
            return True
        if self.sandbox.rec.get("pause_pid"):
            # the sandbox died under running containers: a kubelet recreates it and restarts them
            self.event("Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
            for c in self.ctrs.values():
                if c.proc and c.proc.alive():
                    c.proc.kill()
            self.sandbox.destroy(self.agent.net)
        try:
            mem = self.agent.volumes.memory_volumes(self.pod, self.dir)
            self.sandbox.create(self.pod, self.node, self.agent.net, self.agent.defn.dns_address,
                                self.agent.defn.host_address, mem, 64 << 20)
        except (SandboxError, OSError) as e:
            self.event("Warning", "FailedCreatePodSandBox", f"Failed to create pod sandbox: {e}")
            self.sandbox.destroy(self.agent.net)
            self.next_wake = now + RETRY
            return False
        self.start_time = self.start_time or now
        self.conds.set("PodReadyToStartContainers", True, now)
        self._save()
        return True

    def _ensure_volumes(self, now: float) -> bool:
        if self.volume_paths is not None and now - self.volumes_at < VOLUME_REFRESH:
            return True
        try:
            self.volume_paths = self.agent.volumes.setup(self.pod, self.dir, self.sandbox.ip,
                                                         self.agent.defn.host_address,
                                                         self.agent.allocatable(self.node))
            self.volumes_at = now
            return True
        except (VolumeError, envmod.EnvError, ApiError, OSError) as e:
            if self.volume_paths is not None:
                log.warning("%s/%s: volume refresh failed: %s", self.ns, self.name, e)
                self.volumes_at = now
                return True
            self.event("Warning", "FailedMount", f"MountVolume.SetUp failed: {e}")
            for c in self.ctrs.values():
                if not c.is_running and not c.is_terminated:
                    c.state = waiting("ContainerCreating")
            self.next_wake = now + RETRY
            return False

    def _save(self) -> None:
        if self.gone:
            return
        self.agent.store.save_pod(self.uid, {
            "uid": self.uid, "namespace": self.ns, "name": self.name, "node": self.node.name,
            "phase": self.phase, "reason": self.reason, "message": self.message, "start_time": self.start_time,
            "admitted": self.admitted, "final_deleted": self.final_deleted, "sandbox": self.sandbox.rec,
            "conditions": self.conds.state, "containers": {n: c.to_record() for n, c in self.ctrs.items()},
        })

    # -- for the log server ------------------------------------------------------------------------------
    def log_file(self, container: str, previous: bool) -> Path | None:
        c = self.ctrs.get(container)
        if c is None or c.runs == 0:
            return None
        run = c.runs - (2 if previous else 1)
        if run < 0:
            return None
        f = self.dir / "logs" / container / f"{run}.log"
        return f if f.exists() else None

    def container_running(self, container: str) -> bool:
        c = self.ctrs.get(container)
        return bool(c and c.proc and c.proc.alive())
