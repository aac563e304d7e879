"""Samples /proc every period for bench/cpu.py and writes what it saw as JSON lines (gzip), until SIGTERM.

    python bench/cpu_sampler.py --out FILE.jsonl.gz [--period 1.0] [--state-root DIR]

The first line is a header (clock ticks per second, cores, the sampler's own pid). Every later line is one sample:

- `t`: epoch seconds; `stat`: the `cpu` line of /proc/stat (ticks: user nice system idle iowait irq softirq steal);
  `mem`: the machine's memory in use (bytes, MemTotal - MemAvailable);
- `cpu`: `{"<pid>:<start ticks>": [own ticks, reaped children's ticks, ppid]}` for each process that is new or whose
  numbers changed since the previous sample (pid + start time, so a reused pid is another process);
- `info`: for each new process, and again when its command line changes (exec, a Ray worker's new title): `comm`,
  `cmd` (argv) and the markers from its environment: `pod` (the node agent's Pod uid), `bed` (started by the local
  bed), `run` (a descendant of the pytest process bench/cpu.py started); and from its cgroups, for a process in a
  container other than the sampler's own (a kind node): `node` (the container's id, 12 digits) and `pod` (the uid of
  the Pod whose cgroup holds it);
- `gone`: processes seen before and absent now; `pods`: `{uid: [namespace, name]}` from the node agent's Pod records,
  or on a kind node from the kubelet's log directories (`/var/log/pods/<namespace>_<name>_<uid>`, read through
  `/proc/<pid>/root` of one of the node's own processes), once per Pod.

Nothing is accounted here: bench/cpu_account.py reads these lines.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

POD_MARKER = b"RAYCONFORMANCE_POD="
BED_MARKER = b"RAYCONFORMANCE_BED="
RUN_MARKER = b"RAYCONF_CPU_RUN="  # set by bench/cpu.py in the environment of the pytest it starts
STATE_ROOT = Path(os.environ.get("RAYCONF_STATE", "/run/rayconformance"))
POD_LOOKUPS = 30  # samples to keep looking for a Pod's record before giving up on its namespace
# a container's cgroup: cgroupfs `/docker/<id>`, systemd `docker-<id>.scope`; a Pod's: `pod<uid>` (`-` or `_`)
CONTAINER_CGROUP = re.compile(r"/docker[-/]([0-9a-f]{64})")
# (a static Pod's uid is a hash: 32 digits without separators)
POD_CGROUP = re.compile(r"pod([0-9a-f]{8}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{12})")


def read_stat(pid: str) -> tuple[str, int, int, int, int] | None:
    """(comm, ppid, own ticks, children's ticks, start ticks) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return parse_stat(f.read().decode(errors="replace"))
    except OSError:
        return None


def parse_stat(text: str) -> tuple[str, int, int, int, int]:
    """The fields of read_stat from the text of /proc/<pid>/stat (comm may hold spaces and parentheses)."""
    rparen = text.rfind(")")
    comm = text[text.find("(") + 1:rparen]
    rest = text[rparen + 2:].split()
    return comm, int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14]), int(rest[19])


def used_memory() -> int | None:
    """The machine's memory in use, in bytes: MemTotal - MemAvailable from /proc/meminfo."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        return (int(fields["MemTotal"].split()[0]) - int(fields["MemAvailable"].split()[0])) * 1024
    except (OSError, KeyError, ValueError):
        return None


def read_cmdline(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0")] if raw else []


def read_markers(pid: str) -> dict:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    out = {}
    for var in raw.split(b"\0"):
        if var.startswith(POD_MARKER):
            out["pod"] = var[len(POD_MARKER):].decode(errors="replace")
        elif var.startswith(BED_MARKER):
            out["bed"] = True
        elif var.startswith(RUN_MARKER):
            out["run"] = True
    return out


def read_cgroups(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def innermost_container(cgroups: str, own_container: str | None) -> re.Match | None:
    """The innermost Docker container a process's cgroups name, other than `own_container` (a runner's own, inside
    which a kind node's path goes on: `/docker/<runner>/docker/<node>/...`)."""
    found = [m for m in CONTAINER_CGROUP.finditer(cgroups) if m.group(1) != own_container]
    return found[-1] if found else None


def container_markers(cgroups: str, own_container: str | None, kind_nodes: set[str]) -> dict:
    """`node` and `pod` of a process in one of the `kind_nodes` (container ids, 12 digits), from its cgroups' text;
    nothing for another container's process."""
    node = innermost_container(cgroups, own_container)
    if node is None or node.group(1)[:12] not in kind_nodes:
        return {}
    out = {"node": node.group(1)[:12]}
    pod = POD_CGROUP.search(cgroups, node.end())
    if pod:
        out["pod"] = pod.group(1).replace("_", "-")
    return out


def is_kind_node_root(pid: str, proc: Path = Path("/proc")) -> bool:
    """Whether the process sees a kind node's file system (its `/kind/version`): a node's own process, not a Pod's."""
    return (proc / pid / "root" / "kind" / "version").exists()


def kind_pod_record(uid: str, node_pids: list[str], proc: Path = Path("/proc")) -> list[str] | None:
    """[namespace, name] of a kind Pod from the kubelet's log directory, seen through a node process's root."""
    for pid in node_pids:
        for d in (proc / pid / "root" / "var" / "log" / "pods").glob(f"*_{uid}"):
            namespace, name, _ = d.name.split("_", 2)
            return [namespace, name]
    return None


def read_cpu_line() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def pod_record(uid: str, state_root: Path) -> list[str] | None:
    for f in state_root.glob(f"*/nodeagent/pods/{uid}.json"):
        try:
            rec = json.loads(f.read_text())
            return [rec["namespace"], rec["name"]]
        except (OSError, ValueError, KeyError):
            return None
    return None


class Sampler:
    """Keeps what the previous sample saw; `sample()` returns the next line's dict."""

    def __init__(self, state_root: Path = STATE_ROOT):
        self.state_root = state_root
        self.last: dict[str, tuple] = {}  # key -> (comm, ppid, own, children)
        self.cmd: dict[str, list[str]] = {}
        self.markers: dict[str, dict] = {}
        self.pod_of: dict[str, str] = {}
        self.pending_pods: dict[str, int] = {}
        self.known_pods: set[str] = set()
        self.node_pids: dict[str, str] = {}  # kind node -> the pid of one of its own (not a Pod's) processes
        self.kind_nodes: set[str] = set()  # containers found to be kind nodes
        self.env: dict[str, dict] = {}  # key -> the markers read from its environment
        own = CONTAINER_CGROUP.search(read_cgroups(str(os.getpid())))
        self.own_container = own.group(1) if own else None

    def sample(self) -> dict:
        now, stat = time.time(), read_cpu_line()
        seen, cpu, info = {}, {}, {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            st = read_stat(pid)
            if st is None:
                continue
            comm, ppid, own, children, start = st
            key = f"{pid}:{start}"
            seen[key] = (comm, ppid, own, children)
            prev = self.last.get(key)
            if prev is None or prev[0] != comm or key in self.pod_of:
                cmd = read_cmdline(pid)
                if prev is None or (cmd and cmd != self.cmd.get(key)):
                    # a retitled process (setproctitle) may have overwritten its environment: keep what was read
                    env = read_markers(pid) or self.env.get(key, {})
                    markers = {**self._container(pid), **env}
                    self.cmd[key], self.markers[key], self.env[key] = cmd, markers, env
                    info[key] = {"comm": comm, "cmd": cmd, **markers}
                    if "pod" in markers:
                        self.pod_of[key] = markers["pod"]
                        if markers["pod"] not in self.known_pods:
                            self.pending_pods.setdefault(markers["pod"], POD_LOOKUPS)
            if prev is None or prev[1:] != (ppid, own, children):
                cpu[key] = [own, children, ppid]
        gone = [k for k in self.last if k not in seen]
        for k in gone:
            self.cmd.pop(k, None)
            self.markers.pop(k, None)
            self.env.pop(k, None)
            self.pod_of.pop(k, None)
        self.last = seen
        line = {"t": round(now, 3), "stat": stat, "cpu": cpu, "mem": used_memory()}
        if info:
            line["info"] = info
        if gone:
            line["gone"] = gone
        pods = self._pods()
        if pods:
            line["pods"] = pods
        return line

    def _container(self, pid: str) -> dict:
        """The kind node and Pod markers of a process (read again when it execs: runc moves a container's first
        process into its Pod's cgroup before the exec); a container is a kind node once one of its processes sees
        `/kind/version`, and such a process is the one the node's Pod records are read through."""
        cgroups = read_cgroups(pid)
        node = innermost_container(cgroups, self.own_container)
        if node is not None and is_kind_node_root(pid):
            cid = node.group(1)[:12]
            self.kind_nodes.add(cid)
            if not is_kind_node_root(self.node_pids.get(cid, "-")):  # none yet, or gone (its pid maybe reused)
                self.node_pids[cid] = pid
        return container_markers(cgroups, self.own_container, self.kind_nodes)

    def _pods(self) -> dict:
        found = {}
        for uid in list(self.pending_pods):
            rec = pod_record(uid, self.state_root) or kind_pod_record(uid, list(self.node_pids.values()))
            self.pending_pods[uid] -= 1
            if rec or self.pending_pods[uid] <= 0:
                del self.pending_pods[uid]
                self.known_pods.add(uid)
                if rec:
                    found[uid] = rec
        return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--period", type=float, default=1.0)
    ap.add_argument("--state-root", type=Path, default=STATE_ROOT)
    a = ap.parse_args(argv)
    if a.period <= 0:
        sys.exit(f"cpu_sampler: --period must be positive, not {a.period}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # bench/cpu.py stops the sampler after pytest, Ctrl-C or not
    sampler = Sampler(a.state_root)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(a.out, "wt") as out:
        out.write(json.dumps({"header": {"clk_tck": os.sysconf("SC_CLK_TCK"), "cores": len(os.sched_getaffinity(0)),
                                         "self": os.getpid(), "period": a.period, "t": time.time()}}) + "\n")
        next_at = time.monotonic()
        while True:
            out.write(json.dumps(sampler.sample(), separators=(",", ":")) + "\n")
            out.flush()
            if stop.is_set():
                break
            next_at += a.period
            stop.wait(max(0.0, next_at - time.monotonic()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
