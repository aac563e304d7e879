"""Runs the conformance suite (on the default local bed unless told otherwise) one or more times and prints,
per run: wall time, the sum of test durations, their ratio (how much the tests overlapped), outcomes, the
tests that failed (flakes, when the same code passed before), and the machine's peak memory use, sampled
every second from /proc/meminfo (MemTotal - MemAvailable) while the run lasts. Each run goes to the clean-run count
(bench/runs_ledger.py), whose streak per provider it prints at the end.

    .venv/bin/python bench/suite.py [--runs 3] [--jobs auto|N] [-- <more pytest args>]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

import runs_ledger
from cpu import jobs_arg, suite_paths

ROOT = Path(__file__).resolve().parents[1]


def used_memory_bytes() -> int:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, value = line.split(":", 1)
        info[key] = int(value.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


class MemorySampler:
    def __init__(self, period: float = 1.0):
        self.period, self.peak, self._stop = period, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, used_memory_bytes())
            self._stop.wait(self.period)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def one_run(index: int, jobs: str, extra: list[str]) -> dict:
    run_id = f"bench-suite-{time.strftime('%Y%m%d-%H%M%S')}-{index}"
    argv = [sys.executable, "-m", "pytest", *suite_paths(extra), "-p", "no:cacheprovider", "-q", "-n", str(jobs),
            "--run-id", run_id, *extra]
    started = time.monotonic()
    with MemorySampler() as mem:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    report_path = ROOT / "reports" / run_id / "conformance-report.yaml"
    if not report_path.is_file():
        raise SystemExit(f"bench: run {index} wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    report = yaml.safe_load(report_path.read_text())
    tests = report["tests"]
    ran = [t for t in tests if t["outcome"] != "skipped"]
    busy = sum(t["durationSeconds"] for t in ran)
    return {"run": run_id, "exit": proc.returncode, "wall": wall, "reportWall": report.get("wallSeconds"),
            "busy": busy, "passed": sum(t["outcome"] == "passed" for t in tests),
            "failed": [t["name"] for t in tests if t["outcome"] == "failed"],
            "skipped": sum(t["outcome"] == "skipped" for t in tests), "peakGiB": mem.peak / 2**30,
            "bringup": report["cluster"].get("bringupSeconds"), "install": report["operator"].get("installSeconds")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--jobs", type=jobs_arg, default="auto",
                    help="pytest-xdist workers: auto (the suite chooses, as make) or a count")
    ap.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    a = ap.parse_args(argv)
    results = []
    for i in range(1, a.runs + 1):
        r = one_run(i, a.jobs, a.extra)
        results.append(r)
        runs_ledger.record(ROOT / "reports" / r["run"], None, r["peakGiB"], "suite", exit_code=r["exit"])
        print(f"run {i} ({r['run']}, -n {a.jobs}): exit {r['exit']}, wall {r['wall']:.0f}s (report {r['reportWall']}s), "
              f"sum of test durations {r['busy']:.0f}s, ratio {r['busy'] / r['wall']:.2f}; {r['passed']} passed, "
              f"{len(r['failed'])} failed {r['failed'] or ''}, {r['skipped']} skipped; bring-up {r['bringup']}s, "
              f"operator install {r['install']}s; peak memory used {r['peakGiB']:.1f} GiB", flush=True)
    flakes = sorted({name for r in results for name in r["failed"]})
    print(f"{len(results)} run(s): {sum(not r['failed'] for r in results)} without failures; "
          f"failed tests: {', '.join(flakes) or 'none'}; peak memory {max(r['peakGiB'] for r in results):.1f} GiB")
    print("\n".join(runs_ledger.status_lines(runs_ledger.load())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
