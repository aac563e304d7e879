"""Which processes on the machine are not the run's, and how much CPU they used: a CI runner's other jobs, a load
generator, anything a test's failure must not be blamed on the operator for (pressure.py).

A process is the run's when it is the run's root (the xdist controller, else the pytest process), descends from a
process of the run, or carries a marker in its environment: `RAYCONFORMANCE_RUN` (set by the run before it starts
anything, so an orphaned helper keeps it), `RAYCONFORMANCE_BED` (the local bed's processes) or `RAYCONFORMANCE_POD`
(its Pods'). A process in another container than the run's own (a kind node, and the Pods in it) counts as the
cluster's too. Kernel threads are neither. Every other process is foreign.

A process is `<pid>:<start ticks>`, so a reused pid is another process. Its CPU is its own ticks and those of the
children it reaped; a child that lived before a window and was reaped in it brought its earlier ticks along, which
are taken off again, and what the init process reaps (orphans of every kind) is not counted.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rayconformance.clusters.local.nodeagent.sandbox import MARKER as POD_MARKER
from rayconformance.clusters.local.procs import BED_MARKER

PROC = Path("/proc")
KTHREADD = 2  # the parent of every kernel thread
RUN_MARKER = "RAYCONFORMANCE_RUN"
OWN_MARKERS = tuple(f"{m}=".encode() for m in (RUN_MARKER, BED_MARKER, POD_MARKER))
CONTAINER_CGROUPS = ("/docker/", "/docker-", "/libpod-", "/kubepods")
CLOCK_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
MAX_DEPTH = 64


def mark_run(run_id: str) -> None:
    """Mark what the run starts from now on as the run's (its xdist workers, kubectl, the bed)."""
    os.environ.setdefault(RUN_MARKER, run_id)


def run_root() -> int:
    """The run's first process: the xdist controller for a worker (its parent), else this process."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    own: int  # ticks
    reaped: int  # ticks of the children it reaped
    foreign: bool


def container_of(cgroups: str) -> str | None:
    """The container cgroup path a process is in (its first cgroup line that names one), else None."""
    for line in cgroups.splitlines():
        path = line.split(":", 2)[-1]
        if any(c in path for c in CONTAINER_CGROUPS):
            return path
    return None


class Ownership:
    """Tells the run's processes from the others, remembering each process's answer while it lives."""

    def __init__(self, proc: Path = PROC, root: int | None = None):
        self.proc, self.root = proc, root if root is not None else run_root()
        self.owner: dict[str, bool | None] = {}  # process -> True the run's, False foreign, None a kernel thread
        self.own_container = container_of(self._read(os.getpid(), "cgroup").decode(errors="replace"))

    def snapshot(self) -> dict[str, Proc]:
        seen: dict[int, tuple[str, int, int, int]] = {}  # pid -> (process, ppid, own ticks, reaped ticks)
        for d in self.proc.glob("[0-9]*"):
            rest = self._read(int(d.name), "stat").decode(errors="replace").rpartition(")")[2].split()
            try:
                seen[int(d.name)] = (f"{d.name}:{rest[19]}", int(rest[1]), int(rest[11]) + int(rest[12]),
                                     int(rest[13]) + int(rest[14]))
            except (IndexError, ValueError):
                continue
        self.owner = {key: self.owner[key] for key, *_ in seen.values() if key in self.owner}
        return {key: Proc(pid, ppid, own, reaped, self._owner(pid, seen) is False)
                for pid, (key, ppid, own, reaped) in seen.items()}

    def _owner(self, pid: int, seen: dict, depth: int = 0) -> bool | None:
        key, ppid, *_ = seen[pid]
        if key not in self.owner:
            if pid == KTHREADD or ppid == KTHREADD:
                owner = None
            elif pid in (self.root, os.getpid()):
                owner = True
            elif ppid > 1 and ppid in seen and depth < MAX_DEPTH and self._owner(ppid, seen, depth + 1):
                owner = True
            else:
                owner = self._marked(pid)
            self.owner[key] = owner
        return self.owner[key]

    def _marked(self, pid: int) -> bool:
        if any(m in self._read(pid, "environ") for m in OWN_MARKERS):
            return True
        container = container_of(self._read(pid, "cgroup").decode(errors="replace"))
        return container is not None and not (self.own_container and container.startswith(self.own_container))

    def _read(self, pid: int, name: str) -> bytes:
        try:
            return (self.proc / str(pid) / name).read_bytes()
        except OSError:
            return b""


def counted(p: Proc) -> int:
    """A process's ticks as charged: its own and its reaped children's, but not what init reaps."""
    return p.own + (p.reaped if p.pid != 1 else 0)


def foreign_ticks(start: dict[str, Proc], end: dict[str, Proc]) -> int:
    """Ticks foreign processes used between two snapshots: a process new in `end` counts whole; a child gone since
    `start`, reaped by a foreign parent, takes the ticks it had at `start` off that parent's."""
    total = sum(max(0, counted(p) - (counted(start[key]) if key in start else 0))
                for key, p in end.items() if p.foreign)
    parents = {p.pid: key for key, p in start.items()}
    for key, p in start.items():
        parent = end.get(parents.get(p.ppid, ""))
        if key not in end and parent is not None and parent.foreign and parent.pid != 1:
            total -= p.own + p.reaped
    return max(0, total)
