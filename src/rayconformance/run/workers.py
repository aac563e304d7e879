"""How many pytest-xdist workers a run gets: as many as the machine's cores carry by what the tests cost before.

`make conformance` passes `-n auto` (`JOBS=N` passes `-n N`, which is used as given). For `auto` the run reads an
earlier report (`--durations-from`, else `--baseline`, else the one `shards.earlier_report` picks in its
report directory) and expects each running test to keep `demand` cores busy and the bed and operator `base`
cores, whatever runs. It takes the most workers for which `base + workers x demand` stays within `UTILIZATION` of
the cores, no more than one per `GIB_PER_WORKER` of memory and no more than the earlier tests' total time over the
longest one's (more cannot end the run sooner), and no more than cores + 1 when the earlier run kept the machine
near saturation (`SATURATED`; busy cores cannot show headroom beyond the machine's count). The costs come from `bench/cpu.py`'s `cpu.json` beside the report
when there is one (CPU-seconds per test, and the run's), else from the tests' measurements (`pressure.py`:
the cores busy while each test ran), fitted against how many tests ran beside
each. Without an earlier report: cores + 1 (as before), within the memory bound. The choice and why are the run's
first lines and the report's `scheduling`.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from . import shards
from .options import OPTIONS_FILE, default, dest, read_file

UTILIZATION = 0.9  # of the cores' capacity the expected demand may fill; the rest absorbs Pod starts and bursts
GIB_PER_WORKER = 4
MIN_DEMAND = 0.05  # cores per running test: below this a measurement is noise
# an earlier run that used this share of the machine's capacity or more was (near) saturated: its costs cannot show
# how far the headroom goes, so the choice stays at cores + 1. Below it, the measured demand bounds the workers (a
# 3-worker local run used 37 % of 2 cores; the same suite with 5 workers used 55 % and ended 36 % sooner)
SATURATED = 0.75
CPU_JSON = "cpu.json"  # bench/cpu.py's output beside a report
BUSY = "environment.busy_cores"  # a test's measurements in the report (pressure.py)
CHOICE = pytest.StashKey["Choice"]()


@dataclass(frozen=True)
class Costs:
    durations: dict[str, float]  # test name -> seconds, of the tests that ran
    demand: float  # cores one running test keeps busy (its Ray Pods, its worker, its load generators)
    base: float  # cores busy whatever runs (bed, operator)
    how: str  # how demand and base were measured
    source: str  # the report
    use: float | None = None  # the share of the machine's capacity the earlier run used (None: not known)


@dataclass(frozen=True)
class Choice:
    workers: int
    chosen_by: str  # measured | default | given
    reason: str
    cores: int

    def to_report(self, order: str) -> dict:
        return {"workers": self.workers, "chosenBy": self.chosen_by, "reason": self.reason, "cores": self.cores,
                "order": order}


def one_at_a_time(config: pytest.Config) -> None:
    """Have pytest-xdist hand each worker its next test when it finishes one (`--maxschedchunk 1`, unless given),
    not blocks of consecutive tests: the longest tests then start first on different workers (shards.first_waves)."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1


def machine() -> tuple[int, int]:
    """(cores this process may use, GiB of memory)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 30


def count(n: int) -> str:
    return f"{n} worker{'s' if n != 1 else ''}"


def decide(cores: int, memory_gib: int, costs: Costs | None) -> Choice:
    """The worker count for `cores` and `memory_gib` given the earlier run's `costs` (None: none known)."""
    by_memory = max(1, memory_gib // GIB_PER_WORKER)
    memory = f"at most {by_memory} by memory ({memory_gib} GiB, {GIB_PER_WORKER} GiB each)"
    if costs is None or not any(costs.durations.values()):
        workers = max(1, min(cores + 1, by_memory))
        return Choice(workers, "default", f"{count(workers)}: no earlier report with test durations, so cores + 1 "
                                          f"({cores} + 1), {memory}", cores)
    times = [d for d in costs.durations.values() if d > 0]
    useful = max(1, math.ceil(sum(times) / max(times)))
    demand = max(costs.demand, MIN_DEMAND)
    room = UTILIZATION * cores - costs.base
    by_cpu = max(1, math.floor(room / demand + 1e-9))
    # cores + 1 unless the earlier run left headroom: a saturated run shows no headroom's end
    saturated = costs.use is None or costs.use >= SATURATED
    cap = (f"at most {cores + 1} (cores + 1: the earlier run used "
           f"{'an unknown share' if costs.use is None else f'{costs.use:.0%}'} of the machine)" if saturated else
           f"not held to cores + 1 (the earlier run used {costs.use:.0%} of the machine, under {SATURATED:.0%})")
    workers = max(1, min(by_cpu, useful, by_memory, cores + 1 if saturated else by_cpu))
    expected = costs.base + workers * demand
    return Choice(workers, "measured", (
        f"{count(workers)}: expected CPU demand {costs.base:.2f} (bed, operator) + {workers} x {demand:.2f} (a "
        f"running test) = {expected:.2f} of {cores} cores (target <= {UTILIZATION:.0%}); at most {by_cpu} by CPU, "
        f"{memory}, {cap}, at most {useful} by test times ({sum(times):.0f} s in all, the longest {max(times):.0f} s); "
        f"costs {costs.how} in {costs.source}"), cores)


def given(numprocesses) -> Choice:
    """The choice when the command line set the count (`-n N`, `JOBS=N`), or ran without xdist."""
    cores, _ = machine()
    if not numprocesses:
        return Choice(1, "given", "1 worker: one process (no -n)", cores)
    n = int(numprocesses)
    return Choice(n, "given", f"{count(n)}: set by hand (-n {n}, JOBS={n})", cores)


def fit(windows: list[tuple[float, float, float]]) -> tuple[float, float, str]:
    """(base, demand per running test, how) from each test's (start, stop, cores busy while it ran): the cores busy
    are `base + demand x k`, k the mean number of tests running in that test's window (itself included), fitted
    by least squares weighted by window length. Where k hardly varies (one worker), base is taken as 0: all of
    the demand is charged to the tests, which errs on fewer workers."""
    rows = []
    for s, e, busy in windows:
        span = e - s
        if span <= 0:
            continue
        k = sum(max(0.0, min(e, e2) - max(s, s2)) for s2, e2, _ in windows if e2 > s2) / span
        rows.append((span, max(k, 1.0), busy))
    if not rows:
        return 0.0, 0.0, "none"
    w = sum(r[0] for r in rows)
    mk = sum(r[0] * r[1] for r in rows) / w
    md = sum(r[0] * r[2] for r in rows) / w
    var = sum(r[0] * (r[1] - mk) ** 2 for r in rows) / w
    if len(rows) >= 3 and var >= 0.05:
        a = sum(r[0] * (r[1] - mk) * (r[2] - md) for r in rows) / w / var
        b = md - a * mk
        if a > 0 and b >= 0:
            return b, a, f"fitted over {len(rows)} tests (cores busy = base + demand x tests running)"
    a = sum(r[0] * r[1] * r[2] for r in rows) / sum(r[0] * r[1] ** 2 for r in rows)
    return 0.0, max(a, 0.0), f"over {len(rows)} tests, all of the machine's demand charged to them"


def machine_use(windows: list[tuple[float, float, float]], cores: int) -> float | None:
    """The share of `cores` kept busy over the time some test ran: each stretch between the windows' edges takes
    the mean busy cores of the windows covering it (overlapping tests measured the same machine), weighted by its
    length, so a busy stretch is not counted once per test that overlapped it."""
    edges = sorted({t for s, e, _ in windows for t in (s, e)})
    busy = total = 0.0
    for a, b in zip(edges, edges[1:]):
        covering = [c for s, e, c in windows if s <= a and e >= b]
        if covering and b > a:
            busy += (b - a) * sum(covering) / len(covering)
            total += b - a
    return busy / total / cores if total > 0 and cores > 0 else None


def costs_of(path: Path, cores_now: int) -> Costs:
    """What the tests of the report at `path` cost; `cores_now` stands in for a report that does not say its
    machine's cores. Raises ValueError on a report that is not one."""
    data = yaml.load(path.read_text(), Loader=shards.LOADER)
    tests = [t for t in data["tests"] if t.get("outcome") != "skipped" and t.get("durationSeconds")]
    durations = {t["name"]: float(t["durationSeconds"]) for t in tests}
    cpu_json = path.parent / CPU_JSON
    if cpu_json.is_file():
        cpu = json.loads(cpu_json.read_text())
        spent = {n: sum(s.values()) for n, s in cpu["tests"].items() if n in durations}
        if spent and cpu.get("wallSeconds"):
            demand = sum(spent.values()) / sum(durations[n] for n in spent)
            base = max(0.0, cpu["runCpuSeconds"] - sum(spent.values())) / cpu["wallSeconds"]
            use = cpu["runCpuSeconds"] / cpu["capacityCpuSeconds"] if cpu.get("capacityCpuSeconds") else None
            return Costs(durations, demand, base, f"from {CPU_JSON} ({len(spent)} tests' CPU-seconds)", str(path),
                         use)
    timed = [t for t in tests if "startSeconds" in t and "stopSeconds" in t]
    # (runnable tasks, which older reports carry, are not used: they count every waiting task, e.g. a niced build
    # beside the run, and once made 2 cores look 5 cores short)
    windows = [(float(t["startSeconds"]), float(t["stopSeconds"]), float(t["measurements"][BUSY]))
               for t in timed if (t.get("measurements") or {}).get(BUSY) is not None]
    if len(windows) == len(timed) and windows:
        base, demand, how = fit(windows)
        scheduling = data.get("scheduling")
        cores = int((scheduling.get("cores") if isinstance(scheduling, dict) else None) or cores_now)
        return Costs(durations, demand, base, f"from the cores busy while each test ran, {how}", str(path),
                     machine_use(windows, cores))
    raise ValueError("its tests do not all carry their start, stop and busy cores (an older report)")


def source(config: pytest.Config) -> Path | None:
    """The earlier report the choice reads, from the raw options (this runs before they are checked)."""
    from_file = read_file(config.getoption(dest(OPTIONS_FILE)))

    def value(name: str):
        cli = config.getoption(dest(name))
        return cli if cli is not None else from_file.get(name)

    named = value("durations-from") or value("baseline")
    if named:
        p = config.invocation_params.dir / str(named)
        return p / shards.FILENAME if p.is_dir() else p
    report_dir = config.invocation_params.dir / str(value("report-dir") or "reports")
    return shards.earlier_report(report_dir, value("cluster"), value("operator-profile") or default("operator-profile"))


def choose(config: pytest.Config) -> Choice:
    """The `-n auto` choice of a conformance run."""
    cores, gib = machine()
    path = source(config)
    if path is None:
        return decide(cores, gib, None)
    try:
        return decide(cores, gib, costs_of(path, cores))
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError, json.JSONDecodeError) as e:
        fallback = decide(cores, gib, None)
        why = " ".join(str(e).split()) or type(e).__name__
        return Choice(fallback.workers, fallback.chosen_by, f"{fallback.reason} (report {path} unusable: {why})",
                      cores)
