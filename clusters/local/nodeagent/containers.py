"""Container processes.

Each run of a container is a shim and the container's PID 1 (host PIDs):

    python cinit.py shim (own session)  joins the Pod's mount/UTS/IPC/net namespaces (its pause process), unshares
      |                                 a new PID and mount namespace, waits, writes the exit status to a file
      +- cinit.py (PID 1) -- exec --> the command

The command is PID 1 of its own PID namespace (one per container, as with a real container runtime that does
not share the process namespace), so a shell without a SIGTERM handler ignores SIGTERM exactly as in a real
container, and SIGKILL of PID 1 takes every process of the container with it. The shim's exit-status file (128 +
signal when killed) survives an agent restart, and a restarted agent re-adopts running containers by (pid, start
time) from the Pod record. stdout/stderr go straight to the run's log file.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import procutil
from .sandbox import CINIT, MARKER, Sandbox

log = logging.getLogger("nodeagent.containers")


@dataclass
class Proc:
    """One run of a container: its processes and files."""
    run: int
    shim_pid: int
    shim_start: int | None
    exit_file: str
    error_file: str
    log: str
    started_at: float
    pid1: int | None = None
    pid1_start: int | None = None
    env: dict = field(default_factory=dict)
    cwd: str = "/"
    uid: int = 0  # the container's user: exec (probes, hooks) runs as it, as a runtime's exec does
    gid: int = 0
    _popen: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("_")}

    @classmethod
    def from_dict(cls, d: dict) -> "Proc":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__ and not k.startswith("_")})

    def alive(self) -> bool:
        if self._popen is not None:
            return self._popen.poll() is None
        return procutil.same_process(self.shim_pid, self.shim_start)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended; True if it has."""
        if self._popen is not None:
            try:
                self._popen.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        return procutil.wait_gone(self.shim_pid, self.shim_start, 1e9 if timeout is None else timeout)

    def result(self) -> tuple[int, str | None, str | None]:
        """(exit code, reason, message) once the run has ended."""
        err = Path(self.error_file)
        if err.exists():
            return 128, "StartError", err.read_text(errors="replace").strip()
        try:
            code = int(Path(self.exit_file).read_text().strip())
        except (OSError, ValueError):
            if self._popen is not None and self._popen.returncode is not None:
                rc = self._popen.returncode
                code = 128 - rc if rc < 0 else rc
            else:
                return 137, "ContainerStatusUnknown", "the container's exit status could not be read"
        return code, ("Completed" if code == 0 else "Error"), None

    def signal(self, sig: int) -> None:
        """Signal the container's PID 1 (as a runtime does; PID 1 ignores signals it has no handler for)."""
        if self.pid1 and procutil.same_process(self.pid1, self.pid1_start):
            procutil.kill(self.pid1, sig)

    def kill(self) -> None:
        """SIGKILL PID 1: its whole PID namespace dies with it, and the shim records 137."""
        if self.pid1 and procutil.same_process(self.pid1, self.pid1_start):
            procutil.kill(self.pid1)
        elif procutil.same_process(self.shim_pid, self.shim_start):
            procutil.kill(self.shim_pid)  # PID 1 not up yet: it dies with the shim (parent-death signal)


def start(sandbox: Sandbox, run_dir: Path, log_file: Path, run: int, argv: list[str], env: dict[str, str],
          cwd: str, mounts: list[dict], registry: Path, files: dict[str, str] | None = None,
          user: dict | None = None) -> Proc:
    """Start one run of a container inside the Pod's sandbox."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    exit_file, err_file = run_dir / f"exit-{run}", run_dir / f"start-error-{run}"
    for f in (exit_file, err_file):
        f.unlink(missing_ok=True)
    ovl = run_dir / f"overlay-{run}"
    spec = {"pause_pid": sandbox.pause_pid, "join": sandbox.namespaces(), "exit_file": str(exit_file),
            "argv": argv, "env": env, "cwd": cwd, "mounts": mounts, "overlay_dir": str(ovl),
            "private_roots": ["/tmp", "/dev/shm"], "host_registry": str(registry), "start_error_file": str(err_file),
            "files": files or {}, "user": user}
    spec_path = run_dir / f"spec-{run}.json"
    spec_path.write_text(json.dumps(spec))
    argv_full = [sys.executable, "-I", str(CINIT), "shim", str(spec_path)]
    out = open(log_file, "ab")
    try:
        p = subprocess.Popen(argv_full, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                             env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                                  MARKER: sandbox.uid}, cwd="/")
    finally:
        out.close()
    proc = Proc(run=run, shim_pid=p.pid, shim_start=procutil.start_time(p.pid), exit_file=str(exit_file),
                error_file=str(err_file), log=str(log_file), started_at=time.time(), env=env, cwd=cwd,
                uid=int((user or {}).get("uid", 0)), gid=int((user or {}).get("gid", 0)), _popen=p)
    deadline = time.monotonic() + 10  # PID 1 is the shim's only child
    while time.monotonic() < deadline and p.poll() is None:
        kids = procutil.children(p.pid)
        if kids:
            proc.pid1, proc.pid1_start = kids[0], procutil.start_time(kids[0])
            break
        time.sleep(0.005)
    return proc


def runs_its_command(proc: Proc) -> bool:
    """Whether the container's PID 1 runs the container's command yet. Until then it is the shim's fork setting up
    the container's mounts, working directory and user (cinit.container): a runtime starts the process only once
    that is done, so nothing may enter the container before. True also once PID 1 is gone (callers check that)."""
    try:
        with open(f"/proc/{proc.pid1}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return True
    return f"{CINIT}\0shim\0".encode() not in cmdline


def exec_in(proc: Proc, argv: list[str], timeout: float, env: dict | None = None) -> tuple[int, str]:
    """Run argv inside a running container's namespaces (as `kubectl exec` / exec probes do), once the container
    runs its command (a postStart hook or an exec probe may come right after the start)."""
    if not proc.pid1 or not procutil.same_process(proc.pid1, proc.pid1_start):
        return -1, "container is not running"
    deadline = time.monotonic() + timeout
    while not runs_its_command(proc):
        if time.monotonic() >= deadline:
            return -2, f"command timed out after {timeout}s (the container was still being set up)"
        time.sleep(0.01)
    cmd = ["nsenter", f"--target={proc.pid1}", "--mount", "--uts", "--ipc", "--net", "--pid",
           f"--wdns={proc.cwd or '/'}"]
    if proc.uid or proc.gid:
        cmd += [f"--setuid={proc.uid}", f"--setgid={proc.gid}"]
    cmd += ["--", *argv]
    e = dict(env if env is not None else proc.env)
    try:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=e, start_new_session=True)
    except OSError as ex:
        return -1, str(ex)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        return -2, f"command timed out after {timeout}s"


class Waiter(threading.Thread):
    """Calls back once a run has ended."""

    def __init__(self, proc: Proc, callback):
        super().__init__(daemon=True, name=f"wait-{proc.shim_pid}")
        self.proc, self.callback = proc, callback

    def run(self) -> None:
        self.proc.wait()
        self.callback(self.proc)
