"""What a run shows while it runs, on a terminal: each finished test as `[k/N] name passed in m:ss (ETA m:ss)`, and
the time left of bring-up's long steps (clusters/progress.py), both estimated from an earlier run's report.

The earlier run is the `--durations-from` (or `--baseline`) report when given, else the newest report under the
report directory from the same provider. Its tests' durations, divided by the parallelism it reached (the sum of
its durations over the span from its first test's start to its last test's end), give the time left; a test it did
not run counts as the mean of those it did, and with no earlier run as the mean of this run's finished tests.
Under xdist only the controller shows anything. Where stdout is not a terminal (CI), or with -v (pytest's own lines
per test), the lines are not written.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from rayconformance import features
from rayconformance.clusters.progress import clock
from rayconformance.report.results import FILENAME

MARKUP = {"passed": {"green": True}, "failed": {"red": True}, "skipped": {"yellow": True}}


@dataclass
class History:
    """What an earlier run says about this one's durations."""
    tests: dict[str, float] = field(default_factory=dict)  # test short name -> seconds
    parallel: float | None = None  # tests running at once, on average
    steps: dict[str, float] = field(default_factory=dict)  # "bringup", "install" -> seconds

    @classmethod
    def of(cls, report: dict | None, durations: dict[str, float] | None = None) -> "History":
        if not report:
            return cls(tests=dict(durations or {}))
        tests = report.get("tests") or []
        known = {t["name"]: float(t.get("durationSeconds") or 0) for t in tests if "name" in t}
        spans = [(t["startSeconds"], t["stopSeconds"]) for t in tests if "startSeconds" in t and "stopSeconds" in t]
        parallel = None
        if spans:
            span = max(b for _, b in spans) - min(a for a, _ in spans)
            parallel = sum(known.values()) / span if span > 0 and sum(known.values()) > 0 else None
        steps = {"bringup": (report.get("cluster") or {}).get("bringupSeconds"),
                 "install": (report.get("operator") or {}).get("installSeconds")}
        return cls(tests={**known, **(durations or {})}, parallel=parallel,
                   steps={k: float(v) for k, v in steps.items() if v})


def earlier_report(report_dir: Path, run_id: str, provider: str, limit: int = 5) -> dict | None:
    """The newest report under `report_dir` of a run on `provider`, not this run's; None if there is none."""
    paths = sorted((p for p in report_dir.glob(f"*/{FILENAME}") if p.parent.name != run_id),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    for p in paths[:limit]:
        try:
            report = yaml.safe_load(p.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(report, dict) and (report.get("cluster") or {}).get("provider") == provider:
            return report
    return None


def load_history(options) -> History:
    """The History this run's estimates come from (never raises: an estimate is not worth stopping a run)."""
    if options.durations:
        return History.of(None, options.durations)
    try:
        return History.of(earlier_report(options.report_dir, options.run_id, options.provider))
    except (OSError, KeyError, TypeError, ValueError, AttributeError):
        return History()


class Eta:
    """The time left of a run's tests: the work left divided by the parallelism (at most the tests left)."""

    def __init__(self, names: list[str], history: History, workers: int):
        self.left = dict.fromkeys(names)
        self.known = {n: history.tests[n] for n in names if n in history.tests}
        self.parallel = history.parallel or workers
        self.finished: list[float] = []

    def finish(self, name: str, seconds: float) -> None:
        if name in self.left:
            del self.left[name]
            self.finished.append(seconds)

    def seconds_left(self) -> float | None:
        """None while nothing says how long a test takes."""
        if not self.left:
            return 0.0
        basis = list(self.known.values()) or self.finished
        if not basis:
            return None
        default = sum(basis) / len(basis)
        work = sum(self.known.get(n, default) for n in self.left)
        return work / max(1.0, min(self.parallel, len(self.left)))


def test_line(k: int, n: int, name: str, outcome: str, seconds: float, left: float | None) -> str:
    took = f" in {clock(seconds)}" if outcome != "skipped" else ""
    eta = f" (ETA {clock(left)})" if left is not None and k < n else ""
    return f"[{k}/{n}] {name} {outcome}{took}{eta}"


def short(nodeid: str) -> str:
    return features.short_name(nodeid.rsplit("::", 1)[-1])


class Progress:
    """A pytest plugin object (the controller's): one line per finished test with the run's time left."""

    def __init__(self, config: pytest.Config, history: History):
        self.config, self.history = config, history
        self.eta: Eta | None = None
        self.count = self.total = 0
        self.outcomes: dict[str, tuple[str, float]] = {}  # nodeid -> (outcome so far, seconds so far)

    @property
    def shown(self) -> bool:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        return tr is not None and bool(tr.isatty) and self.config.get_verbosity() <= 0

    def start(self, nodeids: list[str]) -> None:
        if self.eta is None:
            workers = self.config.getoption("numprocesses", None)
            workers = workers if isinstance(workers, int) and workers > 0 else (os.cpu_count() or 1)
            self.eta = Eta([short(i) for i in nodeids], self.history, workers if nodeids else 1)
            self.total = len(nodeids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.start([i.nodeid for i in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.start(list(ids))

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config):
        """pytest's letter per test gives way to the line below (its word, with -v, stays)."""
        result = yield
        if self.shown and isinstance(result, tuple) and len(result) == 3 and result[1]:
            return result[0], "", result[2]
        return result

    def pytest_runtest_logreport(self, report) -> None:
        outcome, seconds = self.outcomes.get(report.nodeid, ("passed", 0.0))
        if report.failed:
            outcome = "failed"
        elif report.skipped and outcome != "failed":
            outcome = "skipped"
        self.outcomes[report.nodeid] = (outcome, seconds + report.duration)
        if report.when != "teardown" or self.eta is None:
            return
        del self.outcomes[report.nodeid]
        self.count += 1
        self.eta.finish(short(report.nodeid), seconds + report.duration)
        if self.shown:
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            line = test_line(self.count, self.total, short(report.nodeid), outcome, seconds + report.duration,
                             self.eta.seconds_left())
            tr.write_line(line, **MARKUP.get(outcome, {}))
