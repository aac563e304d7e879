"""Background processes of the test bed: started detached, recorded by pid file, stopped for sure.

Each process gets `<state>/pids/<name>.pid` and `<state>/logs/<name>.log`. Stopping sends SIGTERM to the
process group, waits, then SIGKILLs; it works for processes left by a crashed earlier run too.

Every process started here carries the env var `RAYCONFORMANCE_BED=<state dir>` (inherited by its children):
the sweep for leftovers of a lost state dir (`kill_strays`) kills only processes carrying it, never another
user of the same tool cache (e.g. a concurrent kind run's `kind` and `kubectl`).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

BED_MARKER = "RAYCONFORMANCE_BED"  # env var of every process the test bed starts (value: its state dir)


def spawn(state: Path, name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> int:
    (state / "pids").mkdir(parents=True, exist_ok=True)
    (state / "logs").mkdir(parents=True, exist_ok=True)
    log = open(state / "logs" / f"{name}.log", "ab")
    try:
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env={**os.environ, **(env or {}), BED_MARKER: str(state)}, cwd=cwd,
                             start_new_session=True)
    except FileNotFoundError:
        raise RuntimeError(f"cannot start {name}: {argv[0]} not found (run `make tools` to build the test bed)") from None
    finally:
        log.close()
    (state / "pids" / f"{name}.pid").write_text(str(p.pid))
    return p.pid


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def running(state: Path, name: str) -> bool:
    f = state / "pids" / f"{name}.pid"
    return f.exists() and alive(int(f.read_text()))


def wait_started(state: Path, name: str, probe, timeout: float, interval: float, error: type[Exception],
                 what: str) -> None:
    """Poll `probe() -> (ok, observed)` while process `name` runs, until ok. Raises `error` with the last lines
    of its log if the process exits meanwhile, or saying `what` did not happen in time."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if not running(state, name):
            tail = (state / "logs" / f"{name}.log").read_text(errors="replace").strip().splitlines()[-5:]
            raise error(f"{name} exited during start-up; last log lines: {' | '.join(tail)}")
        ok, last = probe()
        if ok:
            return
        time.sleep(interval)
    raise error(f"{what} after {timeout:.0f}s ({last}); see {state}/logs/{name}.log")


def _signal_group(pid: int, sig: int) -> None:
    for target in (lambda: os.killpg(pid, sig), lambda: os.kill(pid, sig)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass


def stop_pid(pid: int, grace: float = 10.0) -> None:
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if alive(pid):
        _signal_group(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def stop(state: Path, name: str, grace: float = 10.0) -> None:
    f = state / "pids" / f"{name}.pid"
    if f.exists():
        stop_pid(int(f.read_text()), grace)
        f.unlink(missing_ok=True)


def stop_all(state: Path, order: list[str], grace: float = 10.0) -> None:
    """Stop the named processes in order, then any other recorded ones."""
    pids = state / "pids"
    if not pids.is_dir():
        return
    names = order + sorted(p.stem for p in pids.glob("*.pid") if p.stem not in order)
    for name in names:
        stop(state, name, grace)


def environ_keys(pid: int) -> set[str]:
    """The names of a process's environment variables (as it was started); empty if unreadable."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return set()
    return {e.split(b"=", 1)[0].decode(errors="replace") for e in raw.split(b"\0") if b"=" in e}


def kill_strays(exe_prefixes: list[Path], markers: tuple[str, ...] = (BED_MARKER,)) -> int:
    """Kill the test bed's leftovers of a lost state dir: processes whose executable lives under one of the given
    dirs and that carry one of the `markers` env vars. Other processes running the same executables (another
    provider's run sharing the tool cache) are left alone."""
    n = 0
    # /proc/<pid>/exe is the resolved path: a tool cache behind a symlink is matched by its target too
    prefixes = sorted({str(p) for p in exe_prefixes} | {str(Path(p).resolve()) for p in exe_prefixes})
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            exe = os.readlink(d / "exe")
        except OSError:
            continue
        if any(exe.startswith(p) for p in prefixes) and environ_keys(int(d.name)) & set(markers):
            stop_pid(int(d.name), grace=3)
            n += 1
    return n
