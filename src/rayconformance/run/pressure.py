"""Whether the machine was starved while a test ran: a failure then is the runner's until shown otherwise.

Each test is measured from its setup to the end of its call phase: the mean number of runnable tasks per core
(sampled once a second from /proc/loadavg), the share of that time in which some task waited for a CPU (the
kernel's CPU pressure, /proc/pressure/cpu, where it offers it), the share of CPU time a hypervisor stole, the cores
kept busy on average (/proc/stat; workers.py sizes later runs by it) and the cores kept busy by processes
foreign to the run (`foreign_cores`, foreign.py: a CI runner's other jobs, a load generator; none over a
window shorter than 2 s). They go into the report under the test's `measurements`
(`environment.*`).

A test that fails is marked `overloaded` (`Thresholds`) when foreign processes and steal took at least
`--foreign-load-threshold` of the cores, or the runnable tasks per core averaged at least `--overload-threshold`:
its failure message says so, the report puts `environment: overloaded` beside it and the summary counts it apart,
so a CI gate does not blame the operator for its runner. The run's own load cannot tell the two apart: a clean run
of the whole suite on 2 cores averages 1.5 to 2.5 runnable tasks per core, and a core kept busy by another process
adds about 0.5 to that, while it adds whole cores to `foreign_cores` (bench/overload.py prints both).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from rayconformance.report.results import MEASUREMENT_PROPERTY, OVERLOADED_MEASUREMENT

from . import foreign

PROC = Path("/proc")
MEASURE_PREFIX = f"{MEASUREMENT_PROPERTY}.environment."
WINDOW = pytest.StashKey["Window"]()
MIN_FOREIGN_WINDOW = 2.0  # seconds: below that a few 10 ms ticks of idle daemons would read as cores


def runnable(proc: Path = PROC) -> int:
    """Tasks runnable now (the 4th field of loadavg, `running/total`), less the one reading it."""
    return max(0, int((proc / "loadavg").read_text().split()[3].split("/")[0]) - 1)


def cpu_pressure_us(proc: Path = PROC) -> int | None:
    """Microseconds in which some task waited for a CPU, since boot; None without PSI."""
    try:
        some = (proc / "pressure" / "cpu").read_text().splitlines()[0]
    except OSError:
        return None
    return int(some.rsplit("total=", 1)[1])


def cpu_ticks(proc: Path = PROC) -> tuple[int, int, int]:
    """(all CPU ticks, stolen ticks, idle and iowait ticks) since boot, from the `cpu` line of /proc/stat."""
    fields = [int(x) for x in (proc / "stat").read_text().splitlines()[0].split()[1:]]
    return sum(fields[:8]), fields[7] if len(fields) > 7 else 0, sum(fields[3:5])


@dataclass
class Reading:
    at: float
    pressure_us: int | None
    ticks: int
    stolen: int
    idle: int = 0

    @classmethod
    def now(cls, proc: Path = PROC) -> "Reading":
        ticks, stolen, idle = cpu_ticks(proc)
        return cls(time.monotonic(), cpu_pressure_us(proc), ticks, stolen, idle)


class Window:
    """One test's measurement: a reading at its start, runnable tasks sampled each second until `close()`."""

    def __init__(self, cores: int | None = None, proc: Path = PROC, interval: float = 1.0,
                 ownership: foreign.Ownership | None = None):
        self.cores, self.proc, self.interval = cores or os.cpu_count() or 1, proc, interval
        self.ownership = ownership or foreign.Ownership(proc)
        self.start = Reading.now(proc)
        self.processes = self.ownership.snapshot()
        self.samples: list[int] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._sample, name="rayconformance-pressure", daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while True:
            try:
                self.samples.append(runnable(self.proc))
            except (OSError, ValueError, IndexError):
                return
            if self.stopping.wait(self.interval):
                return

    def close(self) -> dict:
        """Stop sampling; the measurements of the window (keys without the `environment.` prefix)."""
        self.stopping.set()
        self.thread.join(timeout=5)
        try:
            self.samples.append(runnable(self.proc))  # one at the end, so a short window has one too
        except (OSError, ValueError, IndexError):
            pass
        others = foreign.foreign_ticks(self.processes, self.ownership.snapshot()) / foreign.CLOCK_TICK
        end = Reading.now(self.proc)
        wall = max(end.at - self.start.at, 1e-6)
        out = {"runnable_per_core": round(sum(self.samples) / len(self.samples) / self.cores, 2)
               if self.samples else None,
               "steal_pct": round(100 * (end.stolen - self.start.stolen) / max(end.ticks - self.start.ticks, 1), 1),
               "busy_cores": round(self.cores * (1 - (end.idle - self.start.idle + end.stolen - self.start.stolen)
                                                 / max(end.ticks - self.start.ticks, 1)), 2),
               "foreign_cores": round(others / wall, 2) if wall >= MIN_FOREIGN_WINDOW else None}
        if self.start.pressure_us is not None and end.pressure_us is not None:
            out["cpu_pressure_pct"] = round(min(100.0, (end.pressure_us - self.start.pressure_us) / 1e4 / wall), 1)
        return out


@dataclass(frozen=True)
class Thresholds:
    """When a failure is marked overloaded: the machine's runnable tasks per core averaged at least `runnable`
    (`--overload-threshold`), or processes that are not the run's, with the CPU a hypervisor stole, kept at least
    `foreign` of the cores busy (`--foreign-load-threshold`, a share of the cores)."""
    runnable: float
    foreign: float

    def reasons(self, measured: dict, cores: int) -> list[str]:
        out = []
        per_core = measured.get("runnable_per_core")
        if per_core is not None and per_core >= self.runnable:
            out.append(f"runnable tasks per core {per_core} >= {self.runnable:g}")
        other = other_load(measured, cores)
        if other is not None and other >= self.foreign * cores:
            out.append(f"{other:g} of {cores} cores taken by other processes or stolen >= {self.foreign:g} of "
                       f"the cores")
        return out


def other_load(measured: dict, cores: int) -> float | None:
    """Cores kept from the run: busy with processes that are not its own, or stolen by the hypervisor."""
    foreign = measured.get("foreign_cores")
    if foreign is None:
        return None
    return round(foreign + (measured.get("steal_pct") or 0) / 100 * cores, 2)


def describe(measured: dict) -> str:
    parts = [f"{measured.get('runnable_per_core')} runnable tasks per core on average"]
    if measured.get("cpu_pressure_pct") is not None:
        parts.append(f"some task waiting for a CPU {measured['cpu_pressure_pct']} % of the time")
    if measured.get("foreign_cores"):
        parts.append(f"{measured['foreign_cores']} cores kept busy by processes that are not the run's")
    if measured.get("steal_pct"):
        parts.append(f"{measured['steal_pct']} % of CPU time stolen")
    return ", ".join(parts)


class Pressure:
    """A pytest plugin object (every process of a conformance run that runs tests)."""

    def __init__(self, thresholds: Thresholds, cores: int | None = None):
        self.thresholds, self.cores = thresholds, cores or os.cpu_count() or 1
        self.ownership = foreign.Ownership()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        item.stash[WINDOW] = Window(cores=self.cores, ownership=self.ownership)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        window = item.stash.get(WINDOW, None)
        measured = None
        if window is not None and (call.when != "setup" or call.excinfo):
            measured = window.close()
            del item.stash[WINDOW]
            item.user_properties.extend((f"{MEASURE_PREFIX}{k}", v) for k, v in measured.items())
        rep = yield
        reasons = self.thresholds.reasons(measured, self.cores) if measured is not None and rep.failed else []
        if reasons:
            item.user_properties.append((f"{MEASUREMENT_PROPERTY}.{OVERLOADED_MEASUREMENT}", True))
            rep.user_properties = list(item.user_properties)
            note = (f"the machine was overloaded while this test ran ({'; '.join(reasons)}; measured: "
                    f"{describe(measured)}): this failure may be the runner's, not the operator's")
            if hasattr(rep.longrepr, "addsection"):
                rep.longrepr.addsection("rayconformance: environment overloaded", note)
            else:
                rep.sections.append(("rayconformance: environment overloaded", note))
        return rep
