"""Splitting a run across machines (`--shard K/N`) and ordering a run longest test first.

Tests are spread over N shards by the durations an earlier report recorded (`--durations-from REPORT`, else the
`--baseline` report), longest first, each to the shard with the least work so far; a test no report knows counts
as the mean of the known ones, and with no report at all every test counts the same. Every shard computes the same
split from the same collection and report, so CI matrix jobs need nothing but `--shard K/N` and that report.
Skipped tests go to shard 1, so the merged report (`python -m rayconformance merge`) lists each test once. A
shard's report names its shard (`selection.shard`, `recorded`), and merge takes only all N shards of one split
(`missing`): fewer are not the whole selection.

An unsharded run without either option orders its tests by the newest earlier report in its report directory, or
on a fresh clone by its profile's published run (`earlier_report`); a sharded one never does, as each machine's
directory may hold another report. Under pytest-xdist the first tests are arranged for the way xdist hands them
out (`first_waves`).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rayconformance.report.results import FILENAME

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


def parse(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    m = SHARD.match(value.strip())
    if not m or int(m.group(1)) > int(m.group(2)):
        raise pytest.UsageError(f"--shard {value}: use K/N with 1 <= K <= N, e.g. --shard 2/4")
    return int(m.group(1)), int(m.group(2))


def recorded(report: dict) -> tuple[int, int] | None:
    """(K, N) of the shard a report's run was (`selection.shard`), or None for a run without --shard."""
    shard = (report.get("selection") or {}).get("shard")
    try:
        k, n = int(shard["index"]), int(shard["count"])
    except (TypeError, KeyError, ValueError):
        return None
    return (k, n) if 1 <= k <= n else None


def missing(given: list[tuple[int, int]]) -> list[str]:
    """The shards (`K/N`) of an N-way split that `given` lacks: merged, they would not make the whole selection."""
    n = max((n for _, n in given), default=0)
    have = {k for k, _ in given}
    return [f"{k}/{n}" for k in range(1, n + 1) if k not in have]


def durations(path: str | None) -> dict[str, float]:
    """Test short name -> seconds from a report (file or run directory); {} without one."""
    if not path:
        return {}
    p = Path(path)
    p = p / FILENAME if p.is_dir() else p
    try:
        return {t["name"]: float(t.get("durationSeconds") or 0) for t in yaml.load(p.read_text(), Loader=LOADER)["tests"]
                if t.get("outcome") != "skipped"}
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        raise pytest.UsageError(f"--durations-from {path}: not a readable conformance report") from None


MOST = 0.8  # of the tests the largest earlier report ran
UNREADABLE = (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError)  # a report earlier_report passes over
LOOK_BACK = 20  # the newest reports read


def earlier_report(report_dir: Path, cluster: str | None = None, profile: str | None = None) -> Path | None:
    """The earlier report a run orders its tests and sizes its workers by. Of the `LOOK_BACK` newest reports under
    `report_dir` with a test that ran (of runs on the `cluster` definition, when given): the newest of those that
    knew most of the suite (at least `MOST` of the largest one's tests, the published run of the operator `profile`
    counted among them), so that a run of a few tests does not leave the next full run without durations. The
    published run (`published_report`) is taken when no run of this machine's knew as much; else None."""
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    def ran(p: Path) -> tuple[int, str | None]:
        data = yaml.load(p.read_text(), Loader=LOADER)
        on = data.get("cluster") or {}  # a kind cluster is named apart from its definition (details.definition)
        return (sum(1 for t in data["tests"] if t.get("outcome") != "skipped" and t.get("durationSeconds")),
                (on.get("details") or {}).get("definition") or on.get("name"))

    found: list[tuple[float, int, Path]] = []
    for when, p in sorted(((mtime(p), p) for p in report_dir.glob(f"*/{FILENAME}")), reverse=True)[:LOOK_BACK]:
        try:
            n, on = ran(p)
        except UNREADABLE:
            continue
        if n and (cluster is None or on == Path(cluster).stem):
            found.append((when, n, p))
    published = published_report(report_dir, profile) if profile else None
    if published is not None:
        try:
            found.append((-1.0, ran(published)[0], published))  # the oldest: a run of this machine's goes first
        except UNREADABLE:
            pass
    if not found:
        return None
    most = max(n for _, n, _ in found)
    return max((f for f in found if f[1] >= MOST * most), key=lambda f: f[0])[2]


def published_report(report_dir: Path, profile: str) -> Path | None:
    """The published run (`<report_dir>/published/<project>/<version>/`, reports/README.md) of the operator profile
    named `<project>-<version>`, e.g. kuberay-v1.6.1: what a fresh clone, with no run of its own yet, orders its
    tests and sizes its workers by."""
    name = Path(profile).name.removesuffix(".yaml")
    return next((p for p in sorted(report_dir.glob(f"published/*/*/{FILENAME}"))
                 if f"{p.parent.parent.name}-{p.parent.name}" == name), None)


def weights(names: list[str], known: dict[str, float]) -> dict[str, float]:
    seen = [known[n] for n in names if n in known]
    default = sum(seen) / len(seen) if seen else 1.0
    return {n: known.get(n, default) for n in names}


def longest_first(names: list[str], known: dict[str, float]) -> list[str]:
    """Longest first; tests of equal weight (all of them, with no durations) keep their collection order."""
    w = weights(names, known)
    return sorted(names, key=lambda n: -w[n])


def first_waves(names: list, workers: int) -> list:
    """`names` (tests, longest first) as pytest-xdist hands them out one at a time (`--maxschedchunk 1`): its first
    handout gives each worker two tests in a row, the first to run now, the second after it. So the `workers`
    longest run first, one per worker, and the worker with the longest one runs the shortest of the next wave after
    it; from then on each worker that finishes takes the next longest."""
    if workers < 2 or len(names) < 2 * workers:
        return list(names)
    first, second = names[:workers], names[workers:2 * workers]
    paired = [n for pair in zip(first, reversed(second)) for n in pair]
    return paired + list(names[2 * workers:])


def split(names: list[str], shards: int, known: dict[str, float]) -> list[list[str]]:
    """Greedy: longest first, each to the shard with the least work (ties: the lowest shard)."""
    w = weights(names, known)
    out: list[list[str]] = [[] for _ in range(shards)]
    load = [0.0] * shards
    for n in sorted(names, key=lambda n: (-w[n], n)):  # by name among equals: the same split on every machine
        i = min(range(shards), key=lambda k: (load[k], k))
        out[i].append(n)
        load[i] += w[n]
    return out
