"""The container runtime side of a Pod: which container starts next, how a run starts, and what an exit means.

Init containers run one at a time in order (a sidecar need only have started), app containers once all are done.
A run gets its image's runtime, its environment, its mounts (the Pod's private `/tmp`, volumes with subPath,
`/etc/hosts`, `/etc/resolv.conf`, `/etc/hostname`), a fresh log file (the previous run's is kept) and its
postStart hook. An exit becomes a terminated state, or a restart after the crash back-off of `restart`.
Mixed into `PodWorker` (podworker.py), whose state it uses.
"""
from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

from . import containers, env as envmod, probes, security
from .images import ImageError, ImagePulling
from .kube import ApiError
from .restart import RETRY, crash_backoff, image_pull_retry, should_restart
from .sandbox import MARKER, pod_hostname, short
from .status import TERMINAL, CState, init_done, running, terminated, waiting
from .volumes import VolumeError

NEVER_PULL_RECHECK = 10.0  # seconds before an image not present (imagePullPolicy Never) is looked for again



def make_subpath(root: Path, sub: str) -> Path:
    """The directory `sub` of volume `root`, created where missing as the kubelet does (SafeMakeDir): each directory
    it creates takes the mode of the volume's root, whatever the umask (a subPath of a world-writable volume is
    world-writable)."""
    mode = stat.S_IMODE(os.stat(root).st_mode)
    path = root
    for part in Path(sub).parts:
        path = path / part
        if not os.path.lexists(path):
            path.mkdir()
            os.chmod(path, mode)
    return path

class ContainerRuntime:
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
        """Start the container's next run unless it is being stopped or backing off."""
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
            if spec.get("imagePullPolicy") == "Never":  # the kubelet pulls nothing: not present is the reason
                first = c.state.get("waiting", {}).get("reason") != "ErrImageNeverPull"
                c.state = waiting("ErrImageNeverPull", f'Container image "{spec.get("image")}" is not present with '
                                                       f"pull policy of Never")
                if first:
                    self.event("Warning", "ErrImageNeverPull", c.state["waiting"]["message"], self._fieldpath(c))
                c.next_start = now + NEVER_PULL_RECHECK
                self.next_wake = min(self.next_wake, c.next_start)
                return
            c.pull_failures += 1
            reason, delay = image_pull_retry(c.pull_failures, c.state.get("waiting", {}).get("reason"))
            if reason == "ImagePullBackOff":
                c.state = waiting(reason, f'Back-off pulling image "{spec.get("image")}": {e}')
                self.event("Normal", "BackOff", f'Back-off pulling image "{spec.get("image")}"',
                           self._fieldpath(c))
            else:
                c.state = waiting(reason, str(e))
                self.event("Warning", "Failed", f"Failed to pull image \"{spec.get('image')}\": {e}",
                           self._fieldpath(c))
            c.next_start = now + delay
            self.next_wake = min(self.next_wake, c.next_start)
            return
        c.pull_failures = 0
        if rt.note and c.runs == 0:
            self.event("Warning", "NotHonored", f"the local test bed's node agent does not honor: {rt.note}",
                       self._fieldpath(c))
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
            ident = security.identity(self.pod, spec, rt.uid, rt.gid, self.agent.host_caps)
            mounts = self._mounts(spec, full_env, rt.volumes, c.name, c.runs, (ident.uid, ident.gid))
        except (envmod.EnvError, ApiError, VolumeError, security.SecurityError) as e:
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
        shutil.rmtree(cdir / f"image-volumes-{run - 1}", ignore_errors=True)
        self._rotate_logs(c.name, run)
        proc = containers.start(self.sandbox, cdir, self.dir / "logs" / c.name / f"{run}.log", run, argv,
                                full_env, spec.get("workingDir") or rt.workdir, mounts, self.agent.registry,
                                rt.files, ident.to_spec())
        c.runs = run + 1
        c.restart_count = run
        c.proc = proc
        c.image_id = rt.image_id
        c.container_id = f"rayconformance://{short(self.uid)}-{c.name}-{run}"
        c.state = running(proc.started_at)
        c.ready = False
        c.started = not spec.get("startupProbe")
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

    def _mounts(self, spec: dict, env: dict, image_volumes: list[str] = (), name: str = "", run: int = 0,
                owner: tuple[int, int] = (0, 0)) -> list[dict]:
        paths = self.volume_paths or {}
        mounts, targets = [], {os.path.normpath(vm["mountPath"]) for vm in spec.get("volumeMounts") or []}
        # the image's VOLUMEs: as containerd does, a fresh directory per container (run) unless a volumeMount
        # covers the path, owned by the container's user
        for i, path in enumerate(os.path.normpath(v) for v in image_volumes):
            if path in targets:
                continue
            src = self.dir / "containers" / name / f"image-volumes-{run}" / str(i)
            src.mkdir(parents=True, exist_ok=True)
            os.chown(src, *owner)
            mounts.append({"source": str(src), "target": path, "readonly": False})
            targets.add(path)
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
                src = make_subpath(src, sub)
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
            ending = self.pod["metadata"].get("deletionTimestamp") or self.stopping or self.completing or \
                self.phase in TERMINAL
            if not ending and should_restart(c.kind, self.policy, code, spec.get("restartPolicy")):
                c.last_state = term
                delay, c.backoff = crash_backoff(c.backoff, proc.started_at, now)
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


def _tail(path: Path, lines: int, limit: int) -> str:
    try:
        data = path.read_bytes()[-65536:]
    except OSError:
        return ""
    return b"\n".join(data.splitlines()[-lines:]).decode(errors="replace")[-limit:]
