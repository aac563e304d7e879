"""Pods bound to our Nodes: one watch per Node, one worker thread per Pod driving its lifecycle.

A worker reconciles on every wake-up (watch event, process exit, probe result, timer): sandbox -> volumes ->
init containers in order (sidecars stay up) -> app containers -> restarts with back-off -> phase, conditions,
status patch. Deletion follows the kubelet: preStop, SIGTERM to each container's PID 1, wait out the grace
period, SIGKILL, terminal phase, then DELETE with grace 0 and a UID precondition. A DELETED event (force delete)
kills at once. Everything needed to re-adopt running containers is saved in the Pod's record after each sync.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
import time
from pathlib import Path

from . import containers, devices, env as envmod, probes
from .images import ImageError, ImagePulling
from .kube import ApiError, SMP, pod_path
from .sandbox import MARKER, Sandbox, SandboxError, pod_hostname, short
from .status import CState, Conditions, compute_phase, init_done, rfc3339, running, terminated, waiting
from .volumes import VolumeError

log = logging.getLogger("nodeagent.pods")
BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET = 10.0, 300.0, 600.0
RESYNC, VOLUME_REFRESH, RETRY = 10.0, 60.0, 2.0
TERMINAL = ("Succeeded", "Failed")


class PodWorker:
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
        self.probers: dict[str, list[probes.Prober]] = {}
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

    # -- helpers -----------------------------------------------------------------------------------------
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

    def _on_probe(self, name: str, run: int, kind: str, ok: bool, msg: str) -> None:
        c = self.ctrs.get(name)
        if c is None or c.proc is None or c.proc.run != run:
            return
        st = self.probe_state.setdefault(name, {})
        st[kind] = ok
        if kind == "startup" and ok:
            for p in self.probers.get(name, []):
                p.enabled.set()
        if not ok:
            self.event("Warning", "Unhealthy", f"{kind.capitalize()} probe failed: {msg}"[:1000],
                       f"spec.containers{{{name}}}")
            if kind in ("liveness", "startup"):
                st["kill"] = f"Container {name} failed {kind} probe, will be restarted"
        self.kick()

    # -- main loop ----------------------------------------------------------------------------------------
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
        md = self.pod["metadata"]
        api_phase = (self.pod.get("status") or {}).get("phase")
        if api_phase in TERMINAL and self.phase not in TERMINAL:
            self.phase = api_phase
        if md.get("deletionTimestamp"):
            return self._sync_deleting(now)
        if self.phase in TERMINAL:
            self._finish_terminal()
            self._push_status(now)
            self._save()
            return False
        if not self.admitted:
            if not self._admit():
                self._push_status(now)
                self._save()
                return False
        ads = self.pod["spec"].get("activeDeadlineSeconds")
        if ads is not None and self.start_time and now >= self.start_time + float(ads):
            self.reason, self.message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
            self.event("Normal", "DeadlineExceeded", self.message)
            self._kill_everything()
            self.phase = "Failed"
            self._finish_terminal()
            self._push_status(now)
            self._save()
            return False
        if not self._ensure_sandbox(now):
            self._push_status(now)
            self._save()
            return False
        if not self._ensure_volumes(now):
            self._push_status(now)
            self._save()
            return False
        self._run_containers(now)
        self._apply_probe_kills()
        self._update_readiness()
        phase = compute_phase(self.policy, self.inits, self.apps)
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
        self._push_status(now)
        self._save()
        return False

    # -- admission, sandbox, volumes ---------------------------------------------------------------------
    def _admit(self) -> bool:
        src = self.agent.devices
        try:
            for c in self.ctrs.values():
                n = devices.requested(self.spec_of(c.name), src.resource)
                if n:
                    c.devices = src.allocate(self.node.name, self.uid, c.name, n)
        except devices.AdmissionError as e:
            src.release(self.uid)
            for c in self.ctrs.values():
                c.devices = {}
            self.phase, self.reason, self.message = "Failed", "UnexpectedAdmissionError", str(e)
            self.event("Warning", "UnexpectedAdmissionError", str(e))
            return False
        self.admitted = True
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
                                                         self.agent.defn.host_address, self.agent.allocatable(self.node))
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

    # -- containers ---------------------------------------------------------------------------------------
    def _run_containers(self, now: float) -> None:
        for c in self.inits:
            if c.kind == "sidecar":
                if not c.is_running and not c.is_terminated and not self.completing:
                    self._maybe_start(c, now)
                if not (c.is_running and c.started):
                    break
                continue
            if c.is_terminated and c.exit_code == 0:
                continue
            if not c.is_running and not c.is_terminated:
                self._maybe_start(c, now)
            break
        if not init_done(self.inits):
            for c in self.apps:
                if "waiting" in c.state and c.runs == 0:
                    c.state = waiting("PodInitializing")
            return
        for c in self.apps:
            if not c.is_running and not c.is_terminated:
                self._maybe_start(c, now)

    def _maybe_start(self, c: CState, now: float) -> None:
        if c.name in self.killing:
            return
        if c.next_start > now:
            self.next_wake = min(self.next_wake, c.next_start)
            return
        spec = self.spec_of(c.name)
        try:
            rt = self.agent.images.resolve(spec.get("image", ""))
        except ImagePulling:
            c.state = waiting("ContainerCreating")
            self.next_wake = min(self.next_wake, now + 3)
            return
        except ImageError as e:
            c.pull_failures += 1
            if c.state.get("waiting", {}).get("reason") == "ErrImagePull":
                delay = min(BACKOFF_INITIAL * 2 ** (c.pull_failures - 2), BACKOFF_MAX)
                c.state = waiting("ImagePullBackOff", f'Back-off pulling image "{spec.get("image")}": {e}')
                self.event("Normal", "BackOff", f'Back-off pulling image "{spec.get("image")}"',
                           self._fieldpath(c))
            else:
                delay = RETRY
                c.state = waiting("ErrImagePull", str(e))
                self.event("Warning", "Failed", f"Failed to pull image \"{spec.get('image')}\": {e}",
                           self._fieldpath(c))
            c.next_start = now + delay
            self.next_wake = min(self.next_wake, c.next_start)
            return
        c.pull_failures = 0
        hostname = pod_hostname(self.pod)
        try:
            cenv = envmod.container_env(self.pod, spec, self.agent.volumes.objects, self.sandbox.ip,
                                        self.agent.defn.host_address, self.agent.allocatable(self.node))
            full_env = {"PATH": rt.path, "HOSTNAME": hostname, "HOME": rt.home, "LANG": "C.UTF-8", **rt.env}
            full_env.update(cenv)
            full_env.update(c.devices or {})
            full_env["RAY_USAGE_STATS_ENABLED"] = "0"
            full_env[MARKER] = self.uid
            argv = rt.argv(envmod.expand_argv(spec.get("command") or [], full_env),
                           envmod.expand_argv(spec.get("args") or [], full_env))
            mounts = self._mounts(spec, full_env)
        except (envmod.EnvError, ApiError, VolumeError) as e:
            c.state = waiting("CreateContainerConfigError", str(e))
            self.event("Warning", "Failed", f"Error: {e}", self._fieldpath(c))
            c.next_start = now + RETRY
            self.next_wake = min(self.next_wake, c.next_start)
            return
        run = c.runs
        if run == 0:
            self.event("Normal", "Pulled", f'Container image "{spec.get("image")}" already present on machine',
                       self._fieldpath(c))
        cdir = self.dir / "containers" / c.name
        shutil.rmtree(cdir / f"overlay-{run - 1}", ignore_errors=True)
        self._rotate_logs(c.name, run)
        proc = containers.start(self.sandbox, cdir, self.dir / "logs" / c.name / f"{run}.log", run, argv,
                                full_env, spec.get("workingDir") or rt.workdir, mounts, self.agent.registry,
                                rt.files)
        c.runs = run + 1
        c.restart_count = run
        c.proc = proc
        c.image_id = rt.image_id
        c.container_id = f"rayconformance://{short(self.uid)}-{c.name}-{run}"
        c.state = running(proc.started_at)
        c.ready = False
        c.started = not spec.get("startupProbe")
        self.probe_state[c.name] = {}
        containers.Waiter(proc, lambda p, n=c.name: self._on_exit(n, p)).start()
        self.event("Normal", "Created", f"Created container: {c.name}", self._fieldpath(c))
        self.event("Normal", "Started", f"Started container {c.name}", self._fieldpath(c))
        self._start_probers(c)
        post = (spec.get("lifecycle") or {}).get("postStart")
        if post:
            threading.Thread(target=self._post_start, args=(c, proc, post), daemon=True).start()
        self._save()

    def _post_start(self, c: CState, proc: containers.Proc, handler: dict) -> None:
        ok, msg = probes.run_handler(handler, probes.Target(self.sandbox.ip or "", self.spec_of(c.name), proc),
                                     timeout=self._grace())
        if not ok and c.proc is proc:
            self.event("Warning", "FailedPostStartHook", f"PostStartHook failed: {msg}"[:1000], self._fieldpath(c))
            self._kill_container(c, self._grace())

    def _fieldpath(self, c: CState) -> str:
        kind = "containers" if c.kind == "app" else "initContainers"
        return f"spec.{kind}{{{c.name}}}"

    def _mounts(self, spec: dict, env: dict) -> list[dict]:
        paths = self.volume_paths or {}
        mounts, targets = [], {os.path.normpath(vm["mountPath"]) for vm in spec.get("volumeMounts") or []}
        if "/tmp" not in targets:  # the Pod's private /tmp, shared by its containers
            mounts.append({"source": str(self.dir / "tmp"), "target": "/tmp", "readonly": False})
        for vm in spec.get("volumeMounts") or []:
            if vm["name"] not in paths:
                raise VolumeError(f"volume {vm['name']!r} referenced by {spec['name']} is not defined in the Pod")
            src = Path(paths[vm["name"]])
            sub = vm.get("subPath") or envmod.expand(vm.get("subPathExpr") or "", env.get)
            if sub:
                if sub.startswith("/") or ".." in Path(sub).parts:
                    raise VolumeError(f"invalid subPath {sub!r}")
                src = src / sub
                if not os.path.lexists(src):
                    src.mkdir(parents=True, exist_ok=True)
            mounts.append({"source": str(src), "target": vm["mountPath"], "readonly": bool(vm.get("readOnly"))})
        for f in ("hosts", "resolv.conf", "hostname"):
            if f"/etc/{f}" not in targets:
                mounts.append({"source": str(self.dir / "etc" / f), "target": f"/etc/{f}", "readonly": False})
        return mounts

    def _rotate_logs(self, name: str, run: int) -> None:
        d = self.dir / "logs" / name
        if d.is_dir():
            for f in d.glob("*.log"):
                if f.stem.isdigit() and int(f.stem) < run - 1:
                    f.unlink(missing_ok=True)

    def _start_probers(self, c: CState, adopted: bool = False) -> None:
        spec = self.spec_of(c.name)
        proc = c.proc
        target = probes.Target(self.sandbox.ip or self.agent.defn.host_address, spec, proc)
        ps = []
        startup = spec.get("startupProbe")
        started = c.started if adopted else not startup
        for kind in ("startup", "liveness", "readiness"):
            p = spec.get(f"{kind}Probe")
            if not p or (kind == "startup" and started):
                continue
            pr = probes.Prober(kind, p, target, proc.started_at,
                               lambda k, ok, msg, n=c.name, r=proc.run: self._on_probe(n, r, k, ok, msg))
            if kind == "startup" or started:
                pr.enabled.set()
            if adopted and kind == "readiness":
                pr.result = c.ready
                self.probe_state.setdefault(c.name, {})["readiness"] = c.ready
            ps.append(pr)
            pr.start()
        self.probers[c.name] = ps

    def _stop_probers(self, name: str) -> None:
        for p in self.probers.pop(name, []):
            p.stop()

    def _apply_probe_kills(self) -> None:
        for c in self.ctrs.values():
            msg = self.probe_state.get(c.name, {}).pop("kill", None)
            if msg and c.is_running and c.name not in self.killing:
                self.event("Normal", "Killing", msg, self._fieldpath(c))
                self._kill_container(c, self._grace(probe=True, name=c.name))

    def _update_readiness(self) -> None:
        for c in self.ctrs.values():
            if not c.is_running:
                c.ready = False
                continue
            spec = self.spec_of(c.name)
            st = self.probe_state.get(c.name, {})
            if spec.get("startupProbe") and not c.started:
                c.started = bool(st.get("startup"))
            if spec.get("readinessProbe"):
                c.ready = c.started and bool(st.get("readiness"))
            else:
                c.ready = c.started

    def _grace(self, probe: bool = False, name: str | None = None) -> float:
        spec = self.pod["spec"]
        if probe and name:
            ctr = self.spec_of(name)
            for k in ("livenessProbe", "startupProbe"):
                g = (ctr.get(k) or {}).get("terminationGracePeriodSeconds")
                if g is not None:
                    return float(g)
        g = spec.get("terminationGracePeriodSeconds")
        return float(30 if g is None else g)

    def _kill_container(self, c: CState, grace: float) -> None:
        """preStop, SIGTERM, wait up to grace, SIGKILL — in the background; the exit shows up as usual."""
        if c.name in self.killing or not c.proc:
            return
        self.killing.add(c.name)
        proc, spec = c.proc, self.spec_of(c.name)

        def kill():
            deadline = time.monotonic() + grace
            self._pre_stop(spec, proc, deadline)
            proc.signal(signal.SIGTERM)
            if not proc.wait(max(0.0, deadline - time.monotonic())):
                proc.kill()
                proc.wait(10)
        threading.Thread(target=kill, daemon=True, name=f"kill-{c.name}").start()

    def _pre_stop(self, spec: dict, proc: containers.Proc, deadline: float) -> None:
        pre = (spec.get("lifecycle") or {}).get("preStop")
        if not pre or not proc.alive():
            return
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ok, msg = probes.run_handler(pre, probes.Target(self.sandbox.ip or "", spec, proc), timeout=left)
        if not ok:
            self.event("Warning", "FailedPreStopHook", f"PreStopHook failed: {msg}"[:1000],
                       f"spec.containers{{{spec['name']}}}")

    def _should_restart(self, c: CState, code: int) -> bool:
        if self.pod["metadata"].get("deletionTimestamp") or self.stopping or self.completing or \
                self.phase in TERMINAL:
            return False
        if c.kind == "sidecar":
            return True
        if c.kind == "init":
            return self.policy != "Never" and code != 0
        return self.policy == "Always" or (self.policy == "OnFailure" and code != 0)

    def _handle_exits(self, now: float) -> None:
        with self.cond:
            exits, self.exits = self.exits, []
        for name, run in exits:
            c = self.ctrs.get(name)
            if c is None or c.proc is None or c.proc.run != run:
                continue
            proc = c.proc
            code, reason, msg = proc.result()
            spec = self.spec_of(name)
            if msg is None and code != 0 and spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                msg = _tail(Path(proc.log), 80, 2048)
            self._stop_probers(name)
            self.killing.discard(name)
            term = terminated(code, reason, proc.started_at, now, c.container_id, msg)
            c.ready = False
            c.started = False
            c.proc = None
            if self._should_restart(c, code):
                c.last_state = term
                if now - proc.started_at >= BACKOFF_RESET:
                    c.backoff = 0.0
                delay = c.backoff
                c.backoff = BACKOFF_INITIAL if c.backoff == 0 else min(c.backoff * 2, BACKOFF_MAX)
                c.next_start = now + delay
                if delay > 0:
                    c.state = waiting("CrashLoopBackOff", f"back-off {int(delay)}s restarting failed container="
                                      f"{name} pod={self.name}_{self.ns}({self.uid})")
                    self.event("Warning", "BackOff", "Back-off restarting failed container "
                               f"{name} in pod {self.name}_{self.ns}({self.uid})", self._fieldpath(c))
                else:
                    c.state = waiting("ContainerCreating")
            else:
                c.state = term
            self._save()

    # -- deletion and termination -------------------------------------------------------------------------
    def _sync_deleting(self, now: float) -> bool:
        md = self.pod["metadata"]
        if self.term_deadline is None:
            grace = md.get("deletionGracePeriodSeconds")
            grace = self._grace() if grace is None else float(grace)
            self.term_deadline = time.monotonic() + grace
            for name in list(self.probers):
                self._stop_probers(name)
            live = [c for c in self.ctrs.values() if c.proc and c.proc.alive()]
            for c in live:
                self.event("Normal", "Killing", f"Stopping container {c.name}", self._fieldpath(c))
            threading.Thread(target=self._terminate_all, args=(self.term_deadline,), daemon=True,
                             name=f"terminate-{self.name}").start()
        live = [c for c in self.ctrs.values() if c.proc and c.proc.alive()]
        if live:
            for c in live:
                c.ready = False
            self._push_status(now)
            self.next_wake = now + 1.0
            return False
        self._handle_exits(now)
        for c in self.ctrs.values():
            if c.proc is not None:  # ended but the waiter has not reported yet
                self.next_wake = now + 0.2
                return False
        self._finish_terminal()
        if self.phase not in TERMINAL:
            self.phase = compute_phase(self.policy, self.inits, self.apps, pod_terminal=True)
        self._push_status(now)
        self._save()
        if not self.final_deleted:
            try:
                self.agent.kube.delete(pod_path(self.ns, self.name),
                                       {"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}})
            except ApiError as e:
                if e.status not in (404, 409):
                    raise
            self.final_deleted = True
            self._save()
        self.next_wake = now + RESYNC
        return False

    def _terminate_all(self, deadline: float) -> None:
        """Graceful stop of every running container: app containers first, then sidecars in reverse order."""
        apps = [c for c in self.apps if c.proc and c.proc.alive()]
        sides = [c for c in reversed(self.inits) if c.proc and c.proc.alive()]

        def stop(c: CState) -> None:
            proc = c.proc
            if proc is None:
                return
            self._pre_stop(self.spec_of(c.name), proc, deadline)
            proc.signal(signal.SIGTERM)

        for group in (apps, sides):
            ts = [threading.Thread(target=stop, args=(c,), daemon=True) for c in group]
            for t in ts:
                t.start()
            for c in group:
                p = c.proc
                if p is not None:
                    p.wait(max(0.0, deadline - time.monotonic()))
            for t in ts:
                t.join(max(0.0, deadline - time.monotonic()))
        for c in self.ctrs.values():
            p = c.proc
            if p is not None and p.alive():
                p.kill()
                p.wait(10)
        self.kick()

    def _kill_everything(self) -> None:
        for name in list(self.probers):
            self._stop_probers(name)
        procs = [c.proc for c in self.ctrs.values() if c.proc]
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(5)
        self._handle_exits(time.time())

    def _finish_terminal(self) -> None:
        """A terminal Pod keeps its logs but not its sandbox, address or devices."""
        if self.sandbox.rec.get("pause_pid") or self.sandbox.rec.get("netns"):
            for c in self.ctrs.values():
                if c.proc and c.proc.alive():
                    c.proc.kill()
            self.sandbox.destroy(self.agent.net)
            self.sandbox.rec["netns"] = None
        self.agent.devices.release(self.uid)
        self.agent.volumes.tokens.forget(self.uid)

    def _cleanup(self) -> None:
        self._finish_terminal()
        self.sandbox.remove_files()
        self.agent.store.drop_pod(self.uid)

    def shutdown(self) -> None:
        """Agent shutdown: kill the Pod's processes and remove its sandbox (no API calls)."""
        self.stopping = True
        self.kick()
        if threading.current_thread() is not self.thread and self.thread.is_alive():
            self.done.wait(15)  # let a sync in progress finish, so nothing starts after the kill
        self._kill_everything()
        self._finish_terminal()
        self.agent.store.drop_pod(self.uid)

    # -- status and record --------------------------------------------------------------------------------
    def _conditions(self, now: float) -> list[dict]:
        c = self.conds
        terminal = self.phase in TERMINAL
        c.set("PodReadyToStartContainers", self.sandbox.alive() and not terminal, now)
        if not self.inits or init_done(self.inits) or (terminal and self.phase == "Succeeded"):
            c.set("Initialized", True, now)
        else:
            pending = [x.name for x in self.inits if not (x.is_terminated and x.exit_code == 0)
                       and not (x.kind == "sidecar" and x.is_running and x.started)]
            c.set("Initialized", False, now, "ContainersNotInitialized",
                  f"containers with incomplete status: [{' '.join(pending)}]")
        unready = [x.name for x in self.ctrs.values() if x.kind != "init" and not x.ready]
        reason = "PodCompleted" if self.phase == "Succeeded" else "ContainersNotReady"
        msg = None if self.phase == "Succeeded" else f"containers with unready status: [{' '.join(unready)}]"
        c.set("ContainersReady", not unready and not terminal, now, reason, msg)
        gates = [g["conditionType"] for g in self.pod["spec"].get("readinessGates") or []]
        api = {x["type"]: x["status"] for x in (self.pod.get("status") or {}).get("conditions") or []}
        missing = [g for g in gates if api.get(g) != "True"]
        if unready or terminal:
            c.set("Ready", False, now, reason, msg)
        elif missing:
            c.set("Ready", False, now, "ReadinessGatesNotReady",
                  f"corresponding condition of pod readiness gate \"{missing[0]}\" does not exist.")
        else:
            c.set("Ready", True, now)
        return c.to_list()

    def _push_status(self, now: float) -> None:
        if self.foreign:
            return
        host = self.agent.defn.host_address
        st = {"phase": self.phase, "conditions": self._conditions(now), "hostIP": host, "hostIPs": [{"ip": host}]}
        if self.sandbox.ip:
            st["podIP"], st["podIPs"] = self.sandbox.ip, [{"ip": self.sandbox.ip}]
        if self.start_time:
            st["startTime"] = rfc3339(self.start_time)
        if self.reason:
            st["reason"], st["message"] = self.reason, self.message
        st["containerStatuses"] = [c.to_status() for c in self.apps]
        if self.inits:
            st["initContainerStatuses"] = [c.to_status() for c in self.inits]
        gen = self.pod["metadata"].get("generation")
        if gen:
            st["observedGeneration"] = gen
        if st == self.last_sent:
            return
        try:
            got = self.agent.kube.patch(pod_path(self.ns, self.name, "status"),
                                        {"metadata": {"uid": self.uid}, "status": st}, SMP)
            self.last_sent = st
            if got.get("metadata", {}).get("uid") == self.uid:
                self.pod = dict(self.pod, status=got.get("status", {}))
        except ApiError as e:
            if e.status == 404:
                return
            log.warning("%s/%s: status update failed: %s", self.ns, self.name, e)
            self.last_sent = None
            self.next_wake = min(self.next_wake, now + RETRY)

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


def _tail(path: Path, lines: int, limit: int) -> str:
    try:
        data = path.read_bytes()[-65536:]
    except OSError:
        return ""
    return b"\n".join(data.splitlines()[-lines:]).decode(errors="replace")[-limit:]


class PodWatch(threading.Thread):
    """List+watch Pods bound to one Node and hand them to workers."""

    def __init__(self, agent, node):
        super().__init__(daemon=True, name=f"watch-{node.name}")
        self.agent, self.node = agent, node
        self.synced = threading.Event()

    def run(self) -> None:
        path = "/api/v1/pods"
        q = {"fieldSelector": f"spec.nodeName={self.node.name}"}
        rv = None
        while not self.agent.stopping.is_set():
            try:
                if rv is None:
                    lst = self.agent.kube.get(path, q)
                    rv = lst["metadata"]["resourceVersion"]
                    seen = set()
                    for pod in lst.get("items", []):
                        seen.add(pod["metadata"]["uid"])
                        self.agent.dispatch(self.node, "ADDED", pod)
                    self.agent.resync_node(self.node, seen)
                    self.synced.set()
                for ev in self.agent.kube.watch(path, q, rv):
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            rv = None
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if typ in ("ADDED", "MODIFIED", "DELETED"):
                        self.agent.dispatch(self.node, typ, obj)
            except ApiError as e:
                if e.status == 410:
                    rv = None
                else:
                    log.warning("watch %s: %s", self.node.name, e)
                    time.sleep(1)
            except Exception as e:  # noqa: BLE001 - connection drops: retry
                if not self.agent.stopping.is_set():
                    log.warning("watch %s: %s", self.node.name, e)
                    time.sleep(1)
