"""Process identity and waiting, for processes that may or may not be our children (adopted after a restart)."""
from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path


def start_time(pid: int) -> int | None:
    """Kernel start time (clock ticks since boot) of pid: with the pid it identifies a process for sure."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])  # field 22 overall; fields after "comm" start at field 3


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def same_process(pid: int | None, start: int | None) -> bool:
    return bool(pid) and start is not None and start_time(pid) == start and not is_zombie(pid)


def children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            txt = (task / "children").read_text().split()
            out += [int(x) for x in txt]
    except OSError:
        pass
    return out


def kill(pid: int | None, sig: int = signal.SIGKILL) -> None:
    if not pid:
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def reap(pid: int) -> int | None:
    """waitpid without blocking if pid is our child; returns the raw status or None."""
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
        return status if got == pid else None
    except ChildProcessError:
        return None


def wait_gone(pid: int, start: int | None, timeout: float) -> bool:
    """Wait until the process (pid, start) has exited; True if it is gone."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return True
    try:
        while True:
            reap(pid)
            if not same_process(pid, start):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([fd], [], [], min(left, 0.5))
    finally:
        os.close(fd)


def environ_has(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
