"""CPU-seconds a Ray node spends, by process, under named settings: what a leaner Ray per Pod would save.

    .venv/bin/python bench/ray_pod_cpu.py [--ray-version 2.60.0] [--repeat 2] [--idle 60] [--worker]
        [--variant NAME=KEY=VALUE[,KEY=VALUE...]]...

Each setting (`default`: the environment the local bed gives a Ray container, as `clusters/local-gpu.yaml` says;
each `--variant` adds its variables to it) starts a bare `ray start --head` (and with --worker one worker node) on
127.0.0.1 in its own PID namespace, as a Pod's container would run it, then goes through three phases a test's
cluster goes through: `start` (until the dashboard lists every node alive), `idle` (--idle seconds, reported per
minute) and `job` (one Ray job through the Jobs API that runs a task, until it SUCCEEDED). Throughout, each node
is probed as KubeRay's default readiness and liveness probes do (two probes every 5 s: the node's dashboard agent
`/api/local_raylet_healthz`, and on the head the dashboard's `/api/gcs_healthz` too; --no-probes leaves them out).
The Ray processes are
sampled every 0.25 s from /proc; a process's CPU is its last sample. Printed: CPU-seconds per process kind and
phase, the median of --repeat runs, for each setting; then each variant's total against `default`.
Takes the machine's test-bed lock (RAYCONF_LOCK, waiting up to RAYCONF_LOCK_WAIT seconds): on 2 cores a suite
running beside it would change both.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rayconformance.clusters.definition import DefinitionError, load
from rayconformance.clusters.local.paths import LOCK_FILE
from rayconformance.clusters.toolcache import CACHE

SAMPLE = 0.25
PROBE_PERIOD = 5.0  # KubeRay's default probes' periodSeconds
TIMEOUT = 300
TICKS = os.sysconf("SC_CLK_TCK")
PHASES = ("start", "idle", "job")
KINDS = ("dashboard", "dashboard modules", "agent", "runtime env agent", "gcs", "raylet", "ray start",
         "workers", "job driver", "other")
JOB = "python -c \"import ray; ray.init(); print(ray.get(ray.remote(lambda: 1).remote()))\""


def kind_of(cmd: list[str], comm: str, parent_kind: str | None) -> str:
    """Which kind of Ray process this is, from its command line (a dashboard module: a child of the dashboard)."""
    text = " ".join(cmd)
    if "dashboard/dashboard.py" in text:
        return "dashboard"
    if parent_kind in ("dashboard", "dashboard modules"):
        return "dashboard modules"
    if "dashboard/agent.py" in text:
        return "agent"
    if "runtime_env/agent/main.py" in text:
        return "runtime env agent"
    if comm == "gcs_server" or "gcs_server" in text.split(" ", 1)[0]:
        return "gcs"
    if comm == "raylet" or text.split(" ", 1)[0].endswith("/raylet"):
        return "raylet"
    if "default_worker.py" in text or text.startswith("ray::"):
        return "workers"
    if any(c.endswith("/ray") and nxt == "start" for c, nxt in zip(cmd, cmd[1:])) or comm == "unshare":
        return "ray start"
    if parent_kind in ("workers", "agent", "ray start") and "ray.init" in text or parent_kind == "job driver":
        return "job driver"
    return "other"


class Sampler:
    """The CPU of every process under the given roots, by kind; each process counted at its last sample."""

    def __init__(self, roots: list[int]):
        self.roots, self.seen = roots, {}  # pid -> (kind, cpu seconds)

    def sample(self) -> None:
        children: dict[int, list[int]] = {}
        info: dict[int, tuple[str, float]] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(d))
            info[int(d)] = (comm, (int(fields[11]) + int(fields[12])) / TICKS)
        stack = [(r, None) for r in self.roots]
        while stack:
            pid, parent_kind = stack.pop()
            if pid not in info:
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                cmd = []
            comm, cpu = info[pid]
            kind = self.seen.get(pid, (None,))[0] or kind_of([c for c in cmd if c], comm, parent_kind)
            self.seen[pid] = (kind, max(cpu, self.seen.get(pid, (kind, 0.0))[1]))
            stack.extend((c, kind) for c in children.get(pid, []))

    def totals(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for kind, cpu in self.seen.values():
            out[kind] = out.get(kind, 0.0) + cpu
        return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str, body: dict | None = None) -> dict | None:
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def wait(what: str, sampler: Sampler, check, tick=lambda: None) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {what} not reached in {TIMEOUT}s")
        tick()
        sampler.sample()
        time.sleep(SAMPLE)
    sampler.sample()


def run_once(ray_bin: Path, env: dict[str, str], idle: float, worker: bool,
             probing: bool) -> dict[str, dict[str, float]]:
    """One Ray (head, maybe a worker) through the phases; CPU-seconds per phase and kind."""
    tmp = Path(tempfile.mkdtemp(prefix="rc-raycpu-", dir="/tmp"))
    gcs, dash = _free_port(), _free_port()
    common = ["--block", "--num-cpus=1", "--object-store-memory=100000000", "--node-ip-address=127.0.0.1",
              f"--temp-dir={tmp}"]
    agents = [_free_port() for _ in range(2 if worker else 1)]
    cmds = [[str(ray_bin), "start", "--head", f"--port={gcs}", "--dashboard-host=127.0.0.1",
             f"--dashboard-port={dash}", f"--dashboard-agent-listen-port={agents[0]}", *common]]
    if worker:
        cmds.append([str(ray_bin), "start", f"--address=127.0.0.1:{gcs}", f"--dashboard-agent-listen-port={agents[1]}",
                     *common])
    probes = [*(f"http://127.0.0.1:{a}/api/local_raylet_healthz" for a in agents),
              f"http://127.0.0.1:{dash}/api/gcs_healthz"]
    next_probe = [time.monotonic()]

    def probe() -> None:
        if probing and time.monotonic() >= next_probe[0]:
            for url in probes:
                for _ in range(2):  # readiness and liveness
                    _http(url)
            next_probe[0] += PROBE_PERIOD
    procs: list[subprocess.Popen] = []
    sampler = Sampler([])
    phases: dict[str, dict[str, float]] = {}
    base = "http://127.0.0.1:%d" % dash

    def alive() -> bool:
        nodes = ((_http(f"{base}/nodes?view=summary") or {}).get("data") or {}).get("summary") or []
        return sum(1 for n in nodes if (n.get("raylet") or {}).get("state") == "ALIVE") >= len(cmds)

    def mark(phase: str) -> None:
        now, before = sampler.totals(), {k: sum(p.get(k, 0.0) for p in phases.values()) for k in KINDS}
        phases[phase] = {k: round(now.get(k, 0.0) - before[k], 2) for k in KINDS}

    try:
        for cmd in cmds:
            procs.append(subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *cmd],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
            sampler.roots.append(procs[-1].pid)
        wait("every node alive", sampler, alive, probe)
        mark("start")
        end = time.monotonic() + idle
        wait(f"{idle}s idle", sampler, lambda: time.monotonic() >= end, probe)
        mark("idle")
        sub = _http(f"{base}/api/jobs/", {"entrypoint": JOB}) or {}
        job = sub.get("submission_id") or sub.get("job_id")
        if not job:
            raise SystemExit(f"bench: the Jobs API did not take the job: {sub}")
        wait("the job SUCCEEDED", sampler, lambda: (_http(f"{base}/api/jobs/{job}") or {}).get("status") == "SUCCEEDED",
             probe)
        mark("job")
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    return phases


def image_env() -> dict[str, str]:
    """The environment the local bed gives a rayproject/ray container (its cluster definition's image rule)."""
    try:
        rule = load("local-gpu").section.image_rule("rayproject/ray:0")
    except (DefinitionError, AttributeError):
        return {}
    return dict(rule.env) if rule else {}


def bed_lock() -> int:
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + float(os.environ.get("RAYCONF_LOCK_WAIT", "0"))
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise SystemExit(f"bench: the test bed is in use (lock {LOCK_FILE} held); wait for it or set "
                                 "RAYCONF_LOCK_WAIT=<seconds>") from None
            time.sleep(1)


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, pairs = text.partition("=")
    env = dict(p.split("=", 1) for p in pairs.split(",") if "=" in p)
    if not name or not env:
        raise SystemExit(f"bench: --variant {text!r}: give NAME=KEY=VALUE[,KEY=VALUE...]")
    return name, env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ray-version", default="2.60.0")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--idle", type=float, default=60.0)
    ap.add_argument("--worker", action="store_true", help="a worker node joins the head")
    ap.add_argument("--no-probes", action="store_true", help="no readiness/liveness probes")
    ap.add_argument("--variant", action="append", default=[], type=parse_variant)
    a = ap.parse_args(argv)
    ray_bin = CACHE / "venvs" / f"ray-{a.ray_version}" / "bin" / "ray"
    if not ray_bin.exists():
        raise SystemExit(f"bench: no Ray {a.ray_version} venv at {ray_bin}; run `make tools`")
    if not shutil.which("unshare"):
        raise SystemExit("bench: `unshare` (util-linux) is missing; install util-linux")
    base_env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **image_env()}
    settings = [("default", {}), *a.variant]
    lock = bed_lock()
    results: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for name, extra in settings:
            runs = [run_once(ray_bin, {**base_env, **extra}, a.idle, a.worker, not a.no_probes)
                    for _ in range(a.repeat)]
            results[name] = {ph: {k: statistics.median(r[ph][k] for r in runs) for k in KINDS} for ph in PHASES}
            print(f"{name} done", file=sys.stderr, flush=True)
    finally:
        os.close(lock)
    nodes = ("head + worker" if a.worker else "head") + (", no probes" if a.no_probes else ", probed as KubeRay does")
    print(f"Ray {a.ray_version}, bare `ray start` ({nodes}), CPU-seconds by process kind, median of {a.repeat}; "
          f"idle is per minute:")
    for name, extra in settings:
        print(f"\n{name}" + (f" ({', '.join(f'{k}={v}' for k, v in extra.items())})" if extra else ""))
        print(f"  {'kind':20s} {'start':>8s} {'idle/min':>9s} {'job':>8s}")
        r = results[name]
        for k in KINDS:
            row = (r["start"][k], r["idle"][k] * 60 / a.idle, r["job"][k])
            if any(row):
                print(f"  {k:20s} {row[0]:8.2f} {row[1]:9.2f} {row[2]:8.2f}")
        tot = (sum(r["start"].values()), sum(r["idle"].values()) * 60 / a.idle, sum(r["job"].values()))
        print(f"  {'total':20s} {tot[0]:8.2f} {tot[1]:9.2f} {tot[2]:8.2f}")
    d = results["default"]
    for name, _ in settings[1:]:
        r = results[name]
        parts = [f"{ph} {sum(r[ph].values()) - sum(d[ph].values()):+.2f}" for ph in PHASES]
        print(f"{name} against default (CPU-s; idle per {a.idle:.0f}s): {', '.join(parts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
