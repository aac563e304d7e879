"""`python -m rayconformance reproduce RUN`: run a recorded run's selection again with this checkout and compare the
verdicts test by test.

The command is built from the report's `reproduce` section (run/recipe.py): the same operator profile (and source
tree, when it is still there), provider and cluster definition, Ray version, workers, timeout scale, mode and
selection (test paths, -k, -m, --deselect, --ignore, --run-test, --skip-tests, --core-only, the claims, --shard
with the durations report that split it; a shard whose durations report is not here is given by its tests' node
ids). A report made before the section existed gets one derived from what it holds (`derived`: profile, cluster,
Ray version, claims, shard, the names --skip-tests skipped; a selection narrowed by an option whose value it did
not record is given by its tests' node ids), and says so. A merged run is run as one. The new run goes to
`--out DIR` (default reports/) under its own run id; then `differences` names each test whose verdict (passed,
failed, skipped, unsupported: counting.py) is not the same, one a line, and a last line says whether all were.
"""
from __future__ import annotations

import re
import secrets
import shlex
import subprocess
import sys
import time
from pathlib import Path

from . import counting, release
from .results import FILENAME

ROOT = release.ROOT
DURATIONS_IN = re.compile(r"longest first by the test durations in (?P<path>.+)$")
SKIPPED_BY_OPTION = "skipped by --skip-tests"
SECTIONS = ("operator", "cluster", "selection", "scheduling", "reproduce")  # mappings, where a report has them
# what narrowedBy may name that the derived recipe recovers from the report itself
RECOVERED = ("--shard", "--core-only", "--skip-tests", "--run-test", "--exempt-features", "--supported-features",
             "--all-features")


class ReproduceError(ValueError):
    """A run that cannot be reproduced or compared; the message is one line."""


def recipe(report: dict) -> tuple[dict, list[str]]:
    """The report's `reproduce` section, or one derived from the report; and notes on what was derived."""
    if report.get("reproduce"):
        section = dict(report["reproduce"])
        notes = [f"a merged run of {section['shardsMerged']} shards, run as one"] if section.get("shardsMerged") else []
        return section, notes
    return derived(report)


def derived(report: dict) -> tuple[dict, list[str]]:
    """What can be read back of a run's command from a report made before the `reproduce` section."""
    op, cl, sel = report.get("operator") or {}, report.get("cluster") or {}, report.get("selection") or {}
    tests, claimed_by = report.get("tests") or [], str(op.get("claimedBy") or "")
    narrowed = [n for n in sel.get("narrowedBy") or [] if n != claimed_by]
    section = {"operatorProfile": op.get("profile"), "provider": cl.get("provider"),
               "cluster": cl.get("name") if cl.get("provider") != "existing" else None,
               "rayVersion": op.get("rayVersion"),
               "mode": report.get("mode") if report.get("mode") != "default" else None,
               "suiteVersion": report.get("suiteVersion"),
               "suiteCommit": release.suite_commit(str(report.get("suiteVersion") or ""))}
    scheduling = report.get("scheduling") or {}
    section["workers"] = str(scheduling["workers"]) if scheduling.get("chosenBy") == "given" else "auto"
    s: dict = {}
    if claimed_by == "--all-features":
        s["allFeatures"] = True
    elif claimed_by == "--supported-features" or "--exempt-features" in narrowed:
        s["supportedFeatures"] = sorted(op.get("claimedFeatures") or [])
    if "--core-only" in narrowed:
        s["coreOnly"] = True
    if skipped := [t["name"] for t in tests if t.get("reason") == SKIPPED_BY_OPTION]:
        s["skipTests"] = skipped
    if "--run-test" in narrowed:
        s["runTest"] = [t["name"] for t in tests]
    unrecorded = [n for n in narrowed if n not in RECOVERED]
    if unrecorded:
        s["paths"] = [t["nodeid"] for t in tests]
    if (k_n := sel.get("shard")) and not unrecorded:
        s["shard"] = f"{k_n['index']}/{k_n['count']}"
        if m := DURATIONS_IN.match(str(scheduling.get("order") or "")):
            s["durationsFrom"] = m.group("path")
    section["selection"] = s
    got = ", ".join(f"{k} {section[k]}" for k in ("operatorProfile", "provider", "cluster", "rayVersion")
                    if section.get(k))
    notes = [f"the report has no reproduce section (made before it existed): derived from the report: {got}"
             + (f"; selection {', '.join(sorted(s))}" if s else "; the whole selection")]
    if unrecorded:
        notes.append(f"narrowed by {', '.join(unrecorded)}, whose value the report does not record: its "
                     f"{len(tests)} tests given by node id")
    if report.get("shards"):
        notes.append(f"a merged run of {len(report['shards'])} shards, run as one")
    return {k: v for k, v in section.items() if v is not None}, notes


def new_run_id(report: dict) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(report.get("runId") or "run"))[:18].strip("-_.") or "run"
    return f"reproduce-{base}-{time.strftime('%H%M%S')}{secrets.token_hex(1)}"


def existing(path: str | None, section: dict) -> Path | None:
    """A recorded path as it is found here: as recorded, under the run's directory, or under this checkout."""
    if not path:
        return None
    for base in (Path("."), ROOT / (section.get("directory") or "."), ROOT):
        if (base / path).exists():
            return (base / path).resolve()
    return None


def command(section: dict, report: dict, run_id: str, out: Path, python: str = sys.executable) \
        -> tuple[list[str], list[str]]:
    """(the argv that runs the section's selection again, notes on what could not be kept)."""
    s, notes = section.get("selection") or {}, []
    paths = list(s.get("paths") or ["conformance"])
    shard: list[str] = []
    if s.get("shard"):
        durations = existing(s.get("durationsFrom"), section)
        if durations or not s.get("durationsFrom"):
            shard = ["--shard", s["shard"], *(["--durations-from", str(durations)] if durations else [])]
        else:
            paths = [t["nodeid"] for t in report.get("tests") or []]
            notes.append(f"shard {s['shard']} was split by {s['durationsFrom']}, which is not here: its "
                         f"{len(paths)} tests given by node id")
    argv = [python, "-m", "pytest", *paths]
    if section.get("workers"):
        argv += ["-n", str(section["workers"])]
    argv += ["--operator-profile", str(section["operatorProfile"]), "--provider", str(section["provider"])]
    for flag, key in (("--cluster", "cluster"), ("--ray-version", "rayVersion"), ("--timeout-scale", "timeoutScale"),
                      ("--mode", "mode")):
        if section.get(key) is not None:
            argv += [flag, str(section[key])]
    argv += tree_args(section, notes)
    for flag, key in (("-k", "keyword"), ("-m", "markers")):
        if s.get(key):
            argv += [flag, s[key]]
    for flag, key in (("--deselect", "deselect"), ("--ignore", "ignore"), ("--ignore-glob", "ignoreGlob")):
        for value in s.get(key) or []:
            argv += [flag, value]
    for flag, key in (("--run-test", "runTest"), ("--skip-tests", "skipTests"),
                      ("--supported-features", "supportedFeatures"), ("--exempt-features", "exemptFeatures")):
        if s.get(key):
            argv += [flag, ",".join(s[key])]
    argv += [flag for flag, key in (("--core-only", "coreOnly"), ("--all-features", "allFeatures")) if s.get(key)]
    return argv + shard + ["--run-id", run_id, "--report-dir", str(out)], notes


def tree_args(section: dict, notes: list[str]) -> list[str]:
    """--operator-tree for a profile built from a source tree, when the tree is still here."""
    tree = section.get("operatorTree")
    if not tree:
        return []
    if not Path(tree).is_dir():
        src = section.get("operatorSource") or {}
        clone = (f" (the run built {src['repository']} at {src.get('commit', '?')[:12]}"
                 + (", with uncommitted changes" if src.get("uncommittedChanges") else "") + ")"
                 if src.get("repository") else "")
        notes.append(f"operator tree {tree} is not here{clone}: the run uses --operator-tree or "
                     "$RAYCONF_OPERATOR_TREE")
        return []
    head = release.git(Path(tree), "rev-parse", "HEAD")
    if section.get("operatorTreeCommit") and head and head != section["operatorTreeCommit"]:
        notes.append(f"operator tree {tree} is at {head[:12]} now, the run built {section['operatorTreeCommit'][:12]}")
    return ["--operator-tree", tree]


def verdicts(report: dict) -> dict[str, tuple[str, str, str]]:
    """nodeid -> (test name, verdict, why: a failure's message or a skip's reason)."""
    claimed = set((report.get("operator") or {}).get("claimedFeatures") or [])
    return {t["nodeid"]: (t["name"], counting.verdict(t, claimed),
                          " ".join(str(t.get("message") or t.get("reason") or "").split())[:160])
            for t in report.get("tests") or []}


def differences(a: dict, b: dict, name_a: str = "the recorded run", name_b: str = "the new run") \
        -> tuple[list[str], str]:
    """One line per test whose verdict differs between reports `a` and `b` (or that only one has), and the last
    line: the same verdicts, or how many differ."""
    va, vb = verdicts(a), verdicts(b)
    lines = []
    for nodeid in [*va, *(n for n in vb if n not in va)]:
        if nodeid not in vb:
            lines.append(f"{va[nodeid][0]}: {va[nodeid][1]} in {name_a}, not run in {name_b}")
        elif nodeid not in va:
            lines.append(f"{vb[nodeid][0]}: not in {name_a}, {vb[nodeid][1]} in {name_b}")
        elif va[nodeid][1] != vb[nodeid][1]:
            why = f" ({vb[nodeid][2]})" if vb[nodeid][2] and vb[nodeid][1] != "passed" else ""
            lines.append(f"{va[nodeid][0]}: {va[nodeid][1]} in {name_a}, {vb[nodeid][1]} in {name_b}{why}")
    if not lines:
        counts = {}
        for _, v, _ in va.values():
            counts[v] = counts.get(v, 0) + 1
        said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        return lines, f"same verdicts: {len(va)} tests ({said})"
    return lines, f"{len(lines)} difference(s) in {len(set(va) | set(vb))} tests"


def read(run_dir: Path) -> dict:
    import yaml

    try:
        report = yaml.safe_load((run_dir / FILENAME).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ReproduceError(f"{run_dir / FILENAME}: no readable report ({e.__class__.__name__})") from None
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        raise ReproduceError(f"{run_dir / FILENAME}: not a conformance report")
    if bad := [i for i, t in enumerate(report["tests"], 1)
               if not (isinstance(t, dict) and isinstance(t.get("nodeid"), str) and isinstance(t.get("name"), str))]:
        raise ReproduceError(f"{run_dir / FILENAME}: test {bad[0]} of its list has no name or node id (edited or "
                             "damaged)")
    if where := not_a_mapping(report):
        raise ReproduceError(f"{run_dir / FILENAME}: its {where} is not a mapping (edited or damaged)")
    for key, where in (("profile", "operator"), ("provider", "cluster")):
        if not (report.get(where) or {}).get(key):
            raise ReproduceError(f"{run_dir / FILENAME}: names no {where}.{key} to run again with")
    return report


def not_a_mapping(report: dict) -> str | None:
    """The first of the report's sections read here as a mapping that is something else (SECTIONS, then the recorded
    selection)."""
    for key in SECTIONS:
        if not isinstance(report.get(key) or {}, dict):
            return key
    return None if isinstance((report.get("reproduce") or {}).get("selection") or {}, dict) else "reproduce.selection"


def main(run: Path, dry_run: bool = False, out: Path | None = None, compare_with: Path | None = None) -> int:
    """The `reproduce` command: 0 when the verdicts are the same, 1 when not (or on a problem, in one line)."""
    from . import archive

    try:
        with archive.opened(run) as run_dir:
            report = read(run_dir)
        if compare_with is not None:
            with archive.opened(compare_with) as other_dir:
                other = read(other_dir)
            return show(report, other, str(run), str(compare_with))
    except (archive.ArchiveError, ReproduceError) as e:
        print(f"reproduce: {e}", file=sys.stderr)
        return 1
    section, notes = recipe(report)
    out = (out or ROOT / "reports").resolve()
    run_id = new_run_id(report)
    argv, more = command(section, report, run_id, out)
    head = release.git(ROOT, "rev-parse", "HEAD")
    if section.get("suiteCommit") and head and section["suiteCommit"] != head and not head.startswith(
            section["suiteCommit"]):
        more.append(f"this checkout is suite commit {head[:12]}, the run's was {section['suiteCommit'][:12]}: a "
                    "verdict may differ where the suite changed")
    for note in notes + more:
        print(f"reproduce: {note}")
    print("reproduce: " + ("would run" if dry_run else "running") + f" (in {ROOT}): {shlex.join(argv)}")
    if dry_run:
        return 0
    code = subprocess.run(argv, cwd=ROOT).returncode
    try:
        again = read(out / run_id)
    except ReproduceError as e:
        print(f"reproduce: the new run (exit {code}) wrote no report to compare: {e}", file=sys.stderr)
        return 1
    return show(report, again, f"{report.get('runId')}", run_id)


def show(a: dict, b: dict, name_a: str, name_b: str) -> int:
    lines, last = differences(a, b, name_a, name_b)
    for line in lines:
        print(line)
    print(last)
    return 1 if lines else 0

