"""The statistics a report states, re-derived from its own test list: `first_mismatch` names the first one that
does not match, in one line.

A report states its results twice: each test's outcome (which the results checksum covers) and what is counted
from them (counting.py, by the report's statistics scheme): per resource and level the passed/failed/skipped (and
unsupported) counts, the failed, skipped (and unsupported) tests, the failed features, the result and the summary
line, the supported and unsupported features (the claims); the shards' test counts of a merged report; the
baseline block's verdicts and counts. An outcome edited and re-checksummed leaves these behind, so they must all
agree with the tests. Tests are sorted into resources and levels by `table`, the feature list of the suite that made
the report (src/rayconformance/features/ of its commit, as certify.feature_table reads it).
"""
from __future__ import annotations

from types import ModuleType

from . import baseline, counting
from .results import Record

STATUS_KEYS = ("statistics", "failedTests", "failedFeatures", "skippedTests", "result")
VERDICTS = {"passed": {"new-pass", "still-pass", "fixed"}, "failed": {"new-fail", baseline.REGRESSED, "still-failing"},
            "skipped": {"skipped"}}


def first_mismatch(report: dict, table: ModuleType) -> str | None:
    """The first statistic of `report` its tests do not give, as one line; None when all agree."""
    tests = report["tests"]
    unknown = sorted({f for t in tests for f in t["features"] if f not in table.BY_NAME})
    if unknown:
        return f"tests name feature(s) {', '.join(unknown)} the suite that made the report does not know"
    return resource_mismatch(report, table) or shard_mismatch(report) or baseline_mismatch(report)


def resource_mismatch(report: dict, table: ModuleType) -> str | None:
    tests = report["tests"]
    claimed = set(report["operator"].get("claimedFeatures") or [])
    records = [Record(t["nodeid"], t["name"], t["features"], outcome=t["outcome"]) for t in tests]
    stated = {p.get("name"): p for p in counting.resource_blocks(report)}
    for derived in counting.resource_reports(records, claimed, table, counting.scheme_of(report)):
        name, block = derived["name"], stated.get(derived["name"])
        if block is None:
            return f"no resources entry for {name}"
        for level in ("core", "extended"):
            keys = dict.fromkeys(STATUS_KEYS + tuple(derived[level]) + tuple(block[level]))
            for key in keys:
                stated_value, derived_value = block[level].get(key), derived[level].get(key)
                if stated_value != derived_value:
                    return (f"resource {name} {level} {key}: the report says {describe(stated_value)}, its tests give "
                            f"{describe(derived_value)}")
        if block["summary"] != derived["summary"]:
            return (f"resource {name} summary: the report says {block['summary']!r}, its tests give "
                    f"{derived['summary']!r}")
    extra = sorted(set(stated) - set(table.RESOURCES), key=str)
    return f"resources entry for {extra[0]}, which is no resource" if extra else None


def shard_mismatch(report: dict) -> str | None:
    shards = report.get("shards")
    if not shards:
        return None
    total = sum(s.get("tests") or 0 for s in shards)
    if total != len(report["tests"]):
        return f"the shards' test counts add up to {total}, the report lists {len(report['tests'])} tests"
    return None


def baseline_mismatch(report: dict) -> str | None:
    block = report.get("baseline")
    if not block:
        return None
    verdicts = {}
    for t in report["tests"]:
        if "baseline" not in t:
            return f"test {t['name']} has no baseline verdict"
        if t["baseline"] not in VERDICTS[t["outcome"]]:
            return f"test {t['name']} {t['outcome']} cannot be {t['baseline']} against the baseline"
        verdicts[t["name"]] = t["baseline"]
    derived = baseline.block(block["runId"], block.get("path", ""), verdicts)
    for key in ("regressed", "fixed", "counts"):
        if block[key] != derived[key]:
            return f"baseline {key}: the report says {describe(block[key])}, its tests give {describe(derived[key])}"
    return None


def describe(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{v} {k}" for k, v in value.items()) or "nothing"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)

