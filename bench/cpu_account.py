"""CPU-seconds per component and per test, from the samples bench/cpu_sampler.py wrote (see its docstring).

Between two samples a process's own CPU time grew by some ticks: they go to its component at the later sample, and
to a test when the process belongs to one (a Pod in the test's namespace `rc-<test>-<random>`, or an xdist worker,
or its child, while the worker ran the test, from bench/cpu_marks.py). The first sample is the baseline: what a
process used before it is not the run's. A process first seen later started after the previous sample, so all its
time counts.

A process that exits between two samples took its last ticks with it. Its parent gets them back: once it reaps the
child, the parent's children's time grows by the child's final total (own + reaped descendants). What that growth
exceeds over the last totals seen of the children gone meanwhile is `recovered`: the tails of processes seen before,
and the whole of those never seen (shorter than a period). It goes to the gone children's component when they all had
one, else to the parent's. What no parent reaps (a child whose parent exited first, a parent ignoring SIGCHLD) is
lost; the machine's busy time from /proc/stat bounds it (`unattributed`, which also holds interrupts and steal).
Measured on the local bed: 5.7 % of the busy time over 90 s of RayJob tests (Pods deleted in bulk: the kernel
reparents a dying Pod's processes, so their last ticks reach no parent seen), about 0 over 14 minutes of RayService
tests.
"""
from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import cpu_classify as cc

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal of /proc/stat's cpu line


class SamplesError(ValueError):
    pass


def read_samples(path: Path) -> tuple[dict, list[dict]]:
    """(header, samples) from a sampler file; a truncated last line (the sampler killed) is dropped."""
    header, samples = None, []
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    break
                if "header" in d:
                    header = d["header"]
                else:
                    samples.append(d)
    except (OSError, EOFError) as e:
        if not samples:
            raise SamplesError(f"cannot read the samples {path}: {e}") from None
    if header is None or len(samples) < 2:
        raise SamplesError(f"{path}: need a header and at least two samples, found {len(samples)} samples")
    return header, samples


def ns_label(name: str, max_len: int = 63 - len("rc-") - 1 - 5) -> str:
    """A test's short name as it appears in its namespace `rc-<label>-<5 random>`, 63 characters at most (as
    src/rayconformance/kube/namespaces.py makes it, through its dns_label)."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:max_len].rstrip("-") or "x"


def test_of_namespace(namespace: str, labels: dict[str, str | list[str]], seen_at: float | None = None,
                      windows: dict[str, list[tuple[float, float]]] | None = None) -> str | None:
    """The test owning a namespace, given `{label: test name}`; None for a namespace no test made. Tests whose
    names cut to the same label (parametrized ones with long names) share it: `{label: [names]}`; then the one
    running (`windows`: name -> its (start, stop) times) when the namespace was first `seen_at` owns it, the one
    that started last if several were (a test's first Pod comes soon after it starts)."""
    if not namespace.startswith("rc-") or len(namespace) < 10:
        return None
    names = labels.get(namespace[3:-6])
    if names is None or isinstance(names, str):
        return names
    if len(names) == 1:
        return names[0]
    if seen_at is None:
        return None
    running = [(start, n) for n in names for start, stop in (windows or {}).get(n, ()) if start <= seen_at <= stop]
    return max(running)[1] if running else None


@dataclass
class Mark:
    pid: int
    nodeid: str
    start: float
    stop: float


@dataclass
class Result:
    wall: float
    cores: int
    components: dict[str, float]
    tests: dict[str, dict[str, float]]  # test name -> {"ray", "harness", "other"}
    machine_busy: float
    recovered: float
    run_start: float
    notes: list[str] = field(default_factory=list)
    peak_memory: int | None = None  # bytes in use on the machine at most, over the samples (None: not sampled)

    @property
    def capacity(self) -> float:
        return self.wall * self.cores

    @property
    def run_cpu(self) -> float:
        return sum(v for c, v in self.components.items() if cc.in_run(c))

    @property
    def bed_harness_cpu(self) -> float:
        return sum(v for c, v in self.components.items() if cc.group(c) in cc.BED_HARNESS_GROUPS)

    @property
    def setup_cpu(self) -> float:
        """What the run built on first use: not part of a warm run's cost, so not in the bed and harness share."""
        return sum(v for c, v in self.components.items() if cc.group(c) in cc.SETUP_GROUPS)

    @property
    def bed_harness_share(self) -> float:
        """The bed's and harness's percent of the run's CPU, first-use builds left out of both."""
        return 100 * self.bed_harness_cpu / ((self.run_cpu - self.setup_cpu) or 1e-9)

    @property
    def attributed(self) -> float:
        return sum(self.components.values())

    def to_json(self) -> dict:
        return {
            "wallSeconds": round(self.wall, 1), "cores": self.cores, "capacityCpuSeconds": round(self.capacity, 1),
            "runCpuSeconds": round(self.run_cpu, 1),
            "runPercentOfCapacity": round(100 * self.run_cpu / (self.capacity or 1e-9), 1),
            "bedHarnessCpuSeconds": round(self.bed_harness_cpu, 1),
            "setupCpuSeconds": round(self.setup_cpu, 1),
            "bedHarnessPercentOfRun": round(self.bed_harness_share, 1),
            "machineBusyCpuSeconds": round(self.machine_busy, 1),
            "unattributedCpuSeconds": round(self.machine_busy - self.attributed, 1),
            "recoveredFromParentsCpuSeconds": round(self.recovered, 2),
            **({"peakMemoryGiB": round(self.peak_memory / 2**30, 2)} if self.peak_memory else {}),
            "components": {c: round(v, 2) for c, v in sorted(self.components.items(), key=lambda kv: -kv[1])},
            "tests": {t: {k: round(v, 2) for k, v in s.items()} for t, s in self.tests.items()},
            "notes": self.notes,
        }


class Accountant:
    """Feeds on samples in order; `result()` sums them up."""

    def __init__(self, header: dict, tests: list[dict] | None = None, marks: list[Mark] | None = None):
        self.tick = 1.0 / header.get("clk_tck", 100)
        self.cores = header.get("cores", 1)
        self.sampler_pid = header.get("self")
        self.labels: dict[str, list[str]] = defaultdict(list)
        for t in tests or []:
            self.labels[ns_label(t["name"])].append(t["name"])
        self.test_names = [t["name"] for t in tests or []]
        self.by_nodeid = {t.get("nodeid"): t["name"] for t in tests or []}
        self.marks: dict[int, list[Mark]] = defaultdict(list)
        self.windows: dict[str, list[tuple[float, float]]] = defaultdict(list)  # test name -> when it ran
        for m in marks or []:
            self.marks[m.pid].append(m)
            self.windows[self.by_nodeid.get(m.nodeid, m.nodeid)].append((m.start, m.stop))
        self.ns_seen: dict[str, float] = {}  # namespace -> the first sample that showed a Pod of it
        self.last: dict[str, list[int]] = {}  # key -> [own, children, ppid]
        self.info: dict[str, dict] = {}
        self.comp: dict[str, str] = {}
        self.worker: dict[str, int | None] = {}  # harness key -> the xdist worker pid it runs under
        self.pid_key: dict[int, str] = {}
        self.pods: dict[str, list[str]] = {}
        self.by_key: dict[tuple[str, str], float] = defaultdict(float)  # (key, component) -> CPU-s
        self.pod_of_key: dict[str, str] = {}
        self.ray_pods: set[str] = set()
        self.harness_tests: dict[str, float] = defaultdict(float)
        self.recovered = 0.0
        self.first: dict | None = None
        self.prev_t = 0.0
        self.latest: dict | None = None
        self.peak_memory: int | None = None

    # -- one sample -----------------------------------------------------------------------------------------------
    def feed(self, s: dict) -> None:
        self.pods.update(s.get("pods", {}))
        for meta in (s.get("pods") or {}).values():
            if meta:
                self.ns_seen.setdefault(meta[0], s["t"])
        if s.get("mem"):
            self.peak_memory = max(self.peak_memory or 0, s["mem"])
        self._learn_all(s)
        if self.first is None:
            self.first = self.latest = s
            self.prev_t = s["t"]
            self.last.update(s["cpu"])
            return
        gone_by_parent: dict[int, list[str]] = defaultdict(list)
        for key in s.get("gone", []):
            if key in self.last:
                gone_by_parent[self.last[key][2]].append(key)
        self.owed = self._owed(gone_by_parent)
        for key, (own, children, ppid) in s["cpu"].items():
            prev = self.last.get(key, [0, 0, ppid])
            if own > prev[0]:
                self._charge(key, (own - prev[0]) * self.tick, s["t"])
            if children > prev[1]:
                self._reaped(key, children - prev[1], gone_by_parent.pop(int(key.split(":")[0]), []), s["t"])
            self.last[key] = [own, children, ppid]
        for key in s.get("gone", []):
            self.last.pop(key, None)
        self.prev_t = s["t"]
        self.latest = s

    def _learn_all(self, s: dict) -> None:
        """Learn the sample's new or changed processes, each after its parent when both are new."""
        infos = s.get("info") or {}
        ppid = {k: s["cpu"].get(k, self.last.get(k, [0, 0, 0]))[2] for k in infos}
        new_pids = {int(k.split(":")[0]): k for k in infos}
        self.pid_key.update(new_pids)
        done: set[str] = set()
        while len(done) < len(infos):
            ready = [k for k in infos if k not in done and (new_pids.get(ppid[k]) in done or ppid[k] not in new_pids
                                                            or new_pids[ppid[k]] == k)]
            for k in ready or [k for k in infos if k not in done]:  # a cycle cannot happen; never loop on one
                self._learn(k, infos[k], ppid[k])
                done.add(k)

    def _learn(self, key: str, inf: dict, ppid: int) -> None:
        pid = int(key.split(":")[0])
        parent_key = self.pid_key.get(ppid)
        parent_inf = self.info.get(parent_key, {}) if parent_key else {}
        if not (inf.get("pod") or inf.get("bed") or inf.get("run") or inf.get("node")):
            # a process that retitled itself before it was first seen has lost its environment: the parent's holds
            inf = {**inf, **{m: parent_inf[m] for m in ("pod", "bed", "run", "node") if m in parent_inf}}
        self.info[key] = inf
        self.pid_key[pid] = key
        parent = self.comp.get(parent_key) if parent_key else None
        self.comp[key] = cc.SAMPLER if pid == self.sampler_pid else cc.classify(inf, parent, ppid)
        if inf.get("pod"):
            self.pod_of_key[key] = inf["pod"]
            if cc.is_ray(self.comp[key]):
                self.ray_pods.add(inf["pod"])
        if self.comp[key] in (cc.PYTEST, cc.WORKERS):
            self.worker[key] = pid if pid in self.marks else self.worker.get(parent_key) if parent_key else None

    def _charge(self, key: str, seconds: float, t: float) -> None:
        comp = self.comp.get(key, cc.HOST_OTHER)
        self.by_key[(key, comp)] += seconds
        worker = self.worker.get(key)
        if worker is not None:
            for m in self.marks[worker]:
                overlap = min(t, m.stop) - max(self.prev_t, m.start)
                if overlap > 0:
                    name = self.by_nodeid.get(m.nodeid, m.nodeid)
                    self.harness_tests[name] += seconds * overlap / (t - self.prev_t)

    def _owed(self, gone_by_parent: dict[int, list[str]]) -> dict[str, int]:
        """For each process gone in this interval, the ticks seen of it that its reaper's children's time will
        show: its own and its reaped children's at last sight, plus the same of its own children gone with it
        (it reaped them after we last saw it)."""
        owed: dict[str, int] = {}

        def total(key: str, depth: int = 0) -> int:
            if key not in owed:
                own, children, _ = self.last[key]
                kids = gone_by_parent.get(int(key.split(":")[0]), []) if depth < 50 else []
                owed[key] = own + children + sum(total(k, depth + 1) for k in kids if k != key)
            return owed[key]

        for kids in gone_by_parent.values():
            for k in kids:
                total(k)
        return owed

    def _reaped(self, parent: str, ticks: int, gone: list[str], t: float) -> None:
        seen = sum(self.owed[k] for k in gone)
        extra = ticks - seen
        if extra <= 0:
            return
        comps = {self.comp.get(k) for k in gone}
        carrier = gone[0] if len(comps) == 1 else parent
        self.recovered += extra * self.tick
        self._charge(carrier, extra * self.tick, t)

    # -- the sums -------------------------------------------------------------------------------------------------
    def result(self) -> Result:
        if self.first is None or self.latest is self.first:
            raise SamplesError("need at least two samples")
        components: dict[str, float] = defaultdict(float)
        tests = {name: {"ray": 0.0, "harness": 0.0, "other": 0.0} for name in self.test_names}
        for (key, comp), secs in self.by_key.items():
            uid = self.pod_of_key.get(key)
            if comp == cc.POD_OTHER and uid in self.ray_pods:
                comp = cc.RAY_OTHER
            components[comp] += secs
            ns = (self.pods.get(uid) or [None])[0] if uid else None
            test = test_of_namespace(ns, self.labels, self.ns_seen.get(ns), self.windows) if ns else None
            if test:
                bucket = "ray" if cc.is_ray(comp) else "harness" if comp == cc.LOADGEN else "other"
                tests[test][bucket] += secs
        for name, secs in self.harness_tests.items():
            tests.setdefault(name, {"ray": 0.0, "harness": 0.0, "other": 0.0})["harness"] += secs
        first, last = self.first["stat"], self.latest["stat"]
        busy = sum(last[i] - first[i] for i in BUSY_FIELDS) * self.tick
        notes = []
        unknown = {uid for uid in self.pod_of_key.values() if uid not in self.pods}
        if unknown:
            notes.append(f"{len(unknown)} Pod(s) whose namespace was not found (their CPU counts, not per test)")
        if self.test_names and not self.marks:
            notes.append("no test marks (bench/cpu_marks.py): the test process is not split per test")
        return Result(wall=self.latest["t"] - self.first["t"], cores=self.cores, components=dict(components),
                      tests=tests, machine_busy=busy, recovered=self.recovered, run_start=self.first["t"],
                      notes=notes, peak_memory=self.peak_memory)


def account(header: dict, samples: list[dict], tests: list[dict] | None = None,
            marks: list[Mark] | None = None) -> Result:
    acc = Accountant(header, tests, marks)
    for s in samples:
        acc.feed(s)
    return acc.result()


def read_marks(path: Path) -> list[Mark]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            d = json.loads(line)
            out.append(Mark(int(d["pid"]), d["nodeid"], float(d["start"]), float(d["stop"])))
        except (ValueError, KeyError, TypeError):
            continue
    return out
