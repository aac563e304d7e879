"""The clean-run count (issue 31's flake budget): every run a bench makes, kept in `bench/runs-ledger.json` across
sittings, so "10 clean full runs in a row on local, 3 on kind" is counted by the bench, not by hand, even though one
full run takes most of an hour and a sitting fits a few.

A run is *full* when nothing narrowed what the profile claims, as its report's `selection` says
(src/rayconformance/run/selection.py: no -k, -m, test paths, --deselect, --ignore, --run-test, --skip-tests,
--core-only, --exempt-features, --supported-features, --all-features or --shard; merged shards count as one run), and it
ended by itself (pytest exit 0 or 1, no test cut off). It is *clean* when no test failed. The streak of a provider is
its clean full runs since its last full run with a failure; runs of a selection are kept but neither count nor break it.
A failure's entry says whether the run marked it overloaded (the machine starved, src/rayconformance/run/pressure.py),
and its message.

    .venv/bin/python bench/runs_ledger.py status                 # the streak per provider, the last failures
    .venv/bin/python bench/runs_ledger.py record reports/<run> [--peak-gib 10.2]   # a run made otherwise
    .venv/bin/python bench/runs_ledger.py cause RUN TEST --by ours --why "..." [--fixed COMMIT]   # a failure's root cause
    (--full: for a report older than its `selection` block, which says itself whether it was full)

bench/suite.py and bench/cpu.py record each run they make.
"""
from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from rayconformance.report.results import INCOMPLETE  # a test's reason when the run was cut off in it

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "bench" / "runs-ledger.json"
REPORT = "conformance-report.yaml"
TARGETS = {"local": 10, "kind": 3}  # clean full runs in a row that issue 31 asks for
CAUSES = ("operator", "ray", "ours", "machine")  # whose a failure was, once root-caused
def failure_messages(run_dir: Path) -> dict[str, str]:
    """Each failed test's first message line from the run's junit.xml, by test name (the report keeps none)."""
    try:
        root = ET.parse(run_dir / "junit.xml").getroot()
    except (OSError, ET.ParseError):
        return {}
    out = {}
    for case in root.iter("testcase"):
        for failure in (*case.iter("failure"), *case.iter("error")):
            text = failure.get("message") or failure.text or ""
            out.setdefault(case.get("name", "").removeprefix("test_"), " ".join(text.split())[:300])
    return out


def entry(run_dir: Path, full: bool | None, peak_gib: float | None, bench: str, exit_code: int | None = None) -> dict:
    """What the ledger keeps of one run, from its report; `full` only for a report without a `selection` block."""
    path = run_dir / REPORT
    if not path.is_file():
        raise SystemExit(f"runs-ledger: {run_dir} has no {REPORT}; give a run directory under reports/")
    try:
        report = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise SystemExit(f"runs-ledger: {path} is not YAML ({e.__class__.__name__}); give a run's own report")
    tests = report.get("tests", [])
    messages = failure_messages(run_dir)
    failed = [{"name": t["name"], "overloaded": t.get("environment") == "overloaded",
               "reason": messages.get(t["name"]) or " ".join(str(t.get("reason") or "").split())[:300]}
              for t in tests if t["outcome"] == "failed"]
    selection = report.get("selection")
    ended = exit_code in (None, 0, 1) and not any(t.get("reason") == INCOMPLETE for t in tests)
    full = bool(selection["full"] if selection else full) and ended
    cluster, operator = report.get("cluster") or {}, report.get("operator") or {}
    return {"run": report.get("runId", run_dir.name), "date": report.get("date"),
            "suiteVersion": report.get("suiteVersion"), "provider": cluster.get("provider"),
            "cluster": cluster.get("name"), "profile": operator.get("profile"),
            "workers": (report.get("scheduling") or {}).get("workers"), "wallSeconds": report.get("wallSeconds"),
            "full": full, "narrowedBy": (selection or {}).get("narrowedBy"),
            **({} if ended else {"endedEarly": f"pytest exit {exit_code}" if exit_code not in (None, 0, 1)
                                  else "a test was cut off"}),
            "passed": sum(t["outcome"] == "passed" for t in tests), "failed": failed,
            "skipped": sum(t["outcome"] == "skipped" for t in tests),
            "peakMemoryGiB": round(peak_gib, 2) if peak_gib else None, "bench": bench}


def load(path: Path = LEDGER) -> list[dict]:
    """The recorded runs, oldest first."""
    return json.loads(path.read_text()) if path.is_file() else []


def record(run_dir: Path, full: bool | None, peak_gib: float | None, bench: str, path: Path = LEDGER,
           exit_code: int | None = None) -> dict:
    """Adds (or replaces, by run id) the run's entry and returns it."""
    e = entry(run_dir, full, peak_gib, bench, exit_code)
    earlier = {f["name"]: f["cause"] for r in load(path) if r["run"] == e["run"] for f in r["failed"] if "cause" in f}
    for f in e["failed"]:  # a cause found for a failure stays when the run is recorded again
        if f["name"] in earlier:
            f["cause"] = earlier[f["name"]]
    runs = [r for r in load(path) if r["run"] != e["run"]] + [e]
    runs.sort(key=lambda r: r.get("date") or "")
    path.write_text(json.dumps(runs, indent=1) + "\n")
    return e


def set_cause(run: str, test: str, by: str, why: str, fixed: str | None, path: Path = LEDGER) -> dict:
    """Records whose the failure of `test` in `run` was (`by`, one of CAUSES), why, and the commit that fixed it."""
    if by not in CAUSES:
        raise SystemExit(f"runs-ledger: --by {by!r} is not a cause; use one of {', '.join(CAUSES)}")
    runs = load(path)
    entries = [r for r in runs if r["run"] == run]
    if not entries:
        raise SystemExit(f"runs-ledger: no run {run!r} in {path.name}; `status` lists the recorded runs' failures")
    failure = next((f for f in entries[0]["failed"] if f["name"] in (test, test.removeprefix("test_"))), None)
    if failure is None:
        names = ", ".join(f["name"] for f in entries[0]["failed"]) or "none"
        raise SystemExit(f"runs-ledger: {test!r} did not fail in {run} (its failures: {names})")
    failure["cause"] = {"by": by, "why": why, **({"fixed": fixed} if fixed else {})}
    path.write_text(json.dumps(runs, indent=1) + "\n")
    return failure


def streak(runs: list[dict], provider: str) -> tuple[list[dict], dict | None]:
    """The provider's clean full runs since its last full run with a failure (oldest first), and that run."""
    clean: list[dict] = []
    for r in runs:
        if (r["provider"] or "?") != provider or not r["full"]:
            continue
        if r["failed"]:
            clean = []
        else:
            clean.append(r)
    failed = [r for r in runs if (r["provider"] or "?") == provider and r["full"] and r["failed"]]
    return clean, (failed[-1] if failed else None)


def status_lines(runs: list[dict]) -> list[str]:
    """Per provider: its streak of clean full runs (their wall times, workers, profiles, peak memory) and its last
    full run with a failure."""
    out = []
    for provider in sorted({r["provider"] or "?" for r in runs} | set(TARGETS)):
        clean, failed = streak(runs, provider)
        full = [r for r in runs if (r["provider"] or "?") == provider and r["full"]]
        peaks = [r["peakMemoryGiB"] for r in clean if r.get("peakMemoryGiB")]
        line = (f"{provider}: {len(clean)} clean full run(s) in a row"
                + (f" of {TARGETS[provider]} asked" if provider in TARGETS else "")
                + f"; {len(full)} full run(s) recorded")
        if clean:
            walls = [r["wallSeconds"] / 60 for r in clean if r.get("wallSeconds")]
            line += ("; in the streak: " + (f"{min(walls):.1f} to {max(walls):.1f} min, " if walls else "")
                     + f"workers {sorted({r['workers'] for r in clean}, key=str)}, profiles "
                     f"{sorted({r['profile'] for r in clean}, key=str)}, peak memory "
                     + (f"{max(peaks):.2f} GiB" if peaks else "not sampled"))
        out.append(line)
        if failed:
            names = ", ".join(f["name"] + (" (overloaded)" if f["overloaded"] else "") for f in failed["failed"])
            out.append(f"  last full run with a failure: {failed['run']} ({failed['date']}): {names}")
            out += [f"    {f['name']}: cause {f['cause']['by']}: {f['cause']['why']}"
                    + (f" (fixed in {f['cause']['fixed']})" if f["cause"].get("fixed") else "")
                    for f in failed["failed"] if "cause" in f]
        open_ = [f"{r['run']}: {f['name']}" for r in full for f in r["failed"] if "cause" not in f]
        if open_:
            out.append(f"  failures of full runs not yet root-caused ({len(open_)}): {'; '.join(open_)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status")
    rec = sub.add_parser("record")
    rec.add_argument("run_dir", type=Path)
    rec.add_argument("--full", action="store_true", help="a report without a `selection` block (older runs): it "
                                                         "tested everything the profile claims")
    rec.add_argument("--peak-gib", type=float, help="the machine's peak memory in use during the run")
    cause = sub.add_parser("cause", help="record a failure's root cause")
    cause.add_argument("run")
    cause.add_argument("test")
    cause.add_argument("--by", required=True, help=f"whose the failure was: {', '.join(CAUSES)}")
    cause.add_argument("--why", required=True, help="what went wrong, in a line")
    cause.add_argument("--fixed", help="the commit that fixed it, if any")
    a = ap.parse_args(argv)
    if a.cmd == "cause":
        f = set_cause(a.run, a.test, a.by, a.why, a.fixed)
        print(f"runs-ledger: {a.run}: {f['name']}: cause {a.by}")
    if a.cmd == "record":
        e = record(a.run_dir, a.full or None, a.peak_gib, "record")
        print(f"runs-ledger: recorded {e['run']} ({'full' if e['full'] else 'a selection'}, "
              f"{len(e['failed'])} failed)")
    print("\n".join(status_lines(load())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
