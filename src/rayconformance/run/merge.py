"""One report from the reports of a sharded run (`--shard K/N` on N machines):

    python -m rayconformance merge reports/shard-1 reports/shard-2 --out reports/merged

The merged `conformance-report.yaml` has the form of a single run's: every test once, the resources' results
recomputed from the tests (`resources`, also from shards made when they were `profiles`), the longest shard's wall
time, the certification block over the merged tests, and `shards` naming each shard's run, shard and cluster; beside
it the same `report.html` as a single run's (report_page.py), a `junit.xml` holding each shard's test suite, the
shards' diagnostics and test bed logs (`testbed-logs/shard-<K>/`), and the merged run's archive (`DIR.tar.gz`,
archive.py). A shard may be given as its run directory or its archive. Refused in one line: shards of different
suites, operator profiles, claims, selections or implementations; a directory given twice; a report that is no shard
(`selection.shard`, written by a run with `--shard K/N`); a shard given twice or missing (shards.missing: only all N
shards of a run make its selection); a test in two shards (they split different selections).
"""
from __future__ import annotations

import contextlib
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from rayconformance.fieldcov import coverage as field_coverage
from rayconformance.report import archive, baseline, certify, counting, page as report_page
from rayconformance.report.results import FILENAME, Record, write

from . import shards as sharding

SAME = ("suiteVersion", "implementation", "mode")
SAME_LABELLED = (("operator.profile", "operator profile"), ("operator.claimedFeatures", "claimed features"),
                 ("selection.narrowedBy", "selection"), ("certification.suiteDigest", "suite digest"))


class MergeError(ValueError):
    """Shards that cannot be one report; the message is one line."""


def load(run_dir: Path) -> dict:
    path = run_dir / FILENAME
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        raise MergeError(f"{path}: no readable conformance report; give the reports/<run-id> of each shard") from None


def merge(paths: list[Path], out: Path) -> Path:
    """Merge the shards at `paths` (run directories or their archives) into `out`; returns the merged report's path.
    The merged run's archive is written beside `out`."""
    seen: dict[Path, Path] = {}
    for d in paths:
        if d.resolve() in seen:
            raise MergeError(f"{d} is given twice (as {seen[d.resolve()]} and {d}): give each shard's directory once")
        seen[d.resolve()] = d
    with contextlib.ExitStack() as stack:
        try:
            run_dirs = [stack.enter_context(archive.opened(d)) for d in paths]
        except archive.ArchiveError as e:
            raise MergeError(str(e)) from None
        path = merge_dirs(run_dirs, out, paths)
    archive.write(out)
    return path


def merge_dirs(run_dirs: list[Path], out: Path, given: list[Path]) -> Path:
    shards = [load(d) for d in run_dirs]
    first, which = shards[0], shard_set(given, shards)
    for key, label in [(k, k) for k in SAME] + list(SAME_LABELLED):
        values = {repr(_get(s, key)) for s in shards}
        if len(values) > 1:
            raise MergeError(f"the shards differ in {label}: {', '.join(sorted(values))}")
    tests: dict[str, dict] = {}
    where: dict[str, str] = {}
    for s, (k, n) in zip(shards, which):
        for t in s["tests"]:
            if t["nodeid"] in tests:
                raise MergeError(f"test {t['name']} is in shards {where[t['nodeid']]} and {k}/{n}: the shards split "
                                 "different selections; run every shard with the same options and --durations-from")
            tests[t["nodeid"]], where[t["nodeid"]] = t, f"{k}/{n}"
    rows = list(tests.values())
    records = [Record(t["nodeid"], t["name"], t["features"], outcome=t["outcome"]) for t in rows]
    claimed = first["operator"].get("claimedFeatures") or []
    kept = {k: v for k, v in first.items() if k != counting.OLD_RESOURCES_KEY}
    merged = {**kept, "runId": "+".join(s["runId"] for s in shards),
              "wallSeconds": max(s.get("wallSeconds") or 0 for s in shards),
              counting.RESOURCES_KEY: counting.resource_reports(records, set(claimed),
                                                                scheme=counting.scheme_of(first)),
              "tests": rows,
              "selection": merged_selection(shards),
              **({"reproduce": merged_recipe(first["reproduce"], len(shards))} if first.get("reproduce") else {}),
              "shards": [{"runId": s["runId"], "shard": f"{k}/{n}", "cluster": s["cluster"]["name"],
                          "provider": s["cluster"]["provider"], "wallSeconds": s.get("wallSeconds"),
                          "tests": len(s["tests"])} for s, (k, n) in zip(shards, which)],
              "certification": {**first.get("certification", {}), "resultsChecksum": certify.results_checksum(rows)}}
    if any(field_coverage.SECTION in s for s in shards):
        merged = field_coverage.placed(merged, field_coverage.merged([s.get(field_coverage.SECTION) for s in shards]))
    if first.get("baseline"):
        merged["baseline"] = baseline.block(first["baseline"]["runId"], first["baseline"].get("path", ""),
                                            {t["name"]: t["baseline"] for t in rows if "baseline" in t})
    out.mkdir(parents=True, exist_ok=True)
    path = write(out, merged)
    merge_junit([d / "junit.xml" for d in run_dirs], out / "junit.xml")
    copy_evidence(run_dirs, which, out)
    report_page.write(out, merged)
    return path


def copy_evidence(run_dirs: list[Path], which: list[tuple[int, int]], out: Path) -> None:
    """The shards' diagnostics (one directory per test: no two shards have the same) and each shard's test bed
    logs under testbed-logs/shard-<K>/ (shards of one CI run may share a run id)."""
    for d, (k, _) in zip(run_dirs, which):
        if (d / "diagnostics").is_dir():
            shutil.copytree(d / "diagnostics", out / "diagnostics", dirs_exist_ok=True)
        if (d / "testbed-logs").is_dir():
            shutil.copytree(d / "testbed-logs", out / "testbed-logs" / f"shard-{k}", dirs_exist_ok=True)


def shard_set(run_dirs: list[Path], shards: list[dict]) -> list[tuple[int, int]]:
    """(K, N) of each shard, when they are every shard of one run, each once; else a MergeError."""
    which = []
    for d, s in zip(run_dirs, shards):
        shard = sharding.recorded(s)
        if shard is None:
            raise MergeError(f"{d} is no shard: its report names no selection.shard (a run without --shard K/N, or "
                             "of an older suite); merge the reports of one run's --shard K/N runs")
        which.append(shard)
    counts = sorted({n for _, n in which})
    if len(counts) > 1:
        raise MergeError(f"the shards are of different splits: {', '.join(f'{k}/{n}' for k, n in which)}; merge "
                         "the shards of one run")
    given: dict[int, Path] = {}
    for d, (k, n) in zip(run_dirs, which):
        if k in given:
            raise MergeError(f"shard {k}/{n} is given twice ({given[k]} and {d}): give each shard once")
        given[k] = d
    if missing := sharding.missing(which):
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing ({len(which)} of "
                         f"{counts[0]} given): merge every shard of the run")
    return which


def merged_selection(shards: list[dict]) -> dict:
    """The shards together narrow what any of them narrowed but --shard (merge refuses a partial set of shards)."""
    narrowed = sorted({n for s in shards for n in s["selection"]["narrowedBy"] if n != "--shard"})
    return {"full": not narrowed, "narrowedBy": narrowed}


def merged_recipe(recipe: dict, count: int) -> dict:
    """The first shard's `reproduce` section for the merged run: its selection without the split (every shard's
    tests together), and how many shards were merged (its `command` stays that shard's)."""
    selection = {k: v for k, v in (recipe.get("selection") or {}).items() if k not in ("shard", "durationsFrom")}
    return {**recipe, "selection": selection, "shardsMerged": count}


def _get(obj: dict, dotted: str):
    for part in dotted.split("."):
        obj = (obj or {}).get(part)
    return obj


def merge_junit(paths: list[Path], out: Path) -> None:
    root = ET.Element("testsuites")
    for p in paths:
        if p.is_file():
            tree = ET.parse(p).getroot()
            root.extend(tree.findall("testsuite") if tree.tag == "testsuites" else [tree])
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
