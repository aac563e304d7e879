"""Whether a busy runner is told apart from a failing operator: runs a selection of the suite while processes of
its own spin (by default one, one core kept busy, as a CI runner's other job would), then prints for each test its
outcome, what src/rayconformance/run/pressure.py measured over it (runnable tasks per core, CPU pressure, cores kept
busy by processes that are not the run's) and whether its failure was marked `environment: overloaded`. With `--clean`
it prints the same measurements of clean runs (e.g. the two shards of a full run) beside them, as quantiles, and
for each threshold whether it would have marked a clean run's tests and the loaded run's: the numbers the
defaults of `--overload-threshold` and `--foreign-load-threshold` are read from.

    .venv/bin/python bench/overload.py [--spin 1] [--clean reports/shard-1 ...] [-- <pytest args, e.g. -k greeter>]
    .venv/bin/python bench/overload.py --from reports/<run> --clean reports/shard-1   # a recorded loaded run

Its last line counts the loaded run's failures, those marked overloaded and those not; it exits 1 when a failure
of the loaded run was not marked.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import yaml

from rayconformance.run import options, pressure

ROOT = Path(__file__).resolve().parents[1]
REPORT = "conformance-report.yaml"
KEYS = ("runnable_per_core", "cpu_pressure_pct", "foreign_cores")
PREFIX = "environment."


def load(run_dir: Path) -> tuple[list[dict], int]:
    """The tests that ran, and the run's cores."""
    path = run_dir / REPORT
    if not path.is_file():
        raise SystemExit(f"overload: no report at {path}: give a directory a run wrote (reports/<run-id>)")
    report = yaml.safe_load(path.read_text())
    cores = (report.get("scheduling") or {}).get("cores") or 1
    return [t for t in report["tests"] if t["outcome"] != "skipped"], cores


def would_mark(tests: list[dict], cores: int, thresholds: pressure.Thresholds) -> list[dict]:
    """The tests whose failure the thresholds would mark overloaded."""
    return [t for t in tests if thresholds.reasons({k[len(PREFIX):]: v for k, v in (t.get("measurements") or {})
                                                     .items() if k.startswith(PREFIX)}, cores)]


def measured(test: dict, key: str) -> float | None:
    """One of the test's `environment.*` measurements (src/rayconformance/run/pressure.py), None when not measured."""
    return (test.get("measurements") or {}).get(PREFIX + key)


def quantiles(values: list[float]) -> str:
    """Median, 90th percentile and maximum, as one phrase."""
    if not values:
        return "none measured"
    v = sorted(values)

    def q(share: float) -> float:
        return v[min(len(v) - 1, int(share * len(v)))]
    return f"median {q(0.5):g}, p90 {q(0.9):g}, max {v[-1]:g} (n={len(v)})"


def run_loaded(spin: int, extra: list[str]) -> Path:
    run_id = f"bench-overload-{time.strftime('%Y%m%d-%H%M%S')}"
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(spin)]
    try:
        subprocess.run([sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-q",
                        "--run-id", run_id, *extra], cwd=ROOT)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    return ROOT / "reports" / run_id


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spin", type=int, default=1, help="processes kept spinning while the run lasts (one core each)")
    ap.add_argument("--clean", type=Path, action="append", default=[], help="a clean run's report directory")
    ap.add_argument("--from", dest="from_run", type=Path, help="a loaded run already recorded: do not run one")
    ap.add_argument("--overload-threshold", type=float, default=options.default("overload-threshold"))
    ap.add_argument("--foreign-load-threshold", type=float, default=options.default("foreign-load-threshold"))
    ap.add_argument("extra", nargs="*", help="pytest arguments (after --)")
    a = ap.parse_args(argv)
    thresholds = pressure.Thresholds(a.overload_threshold, a.foreign_load_threshold)
    clean_runs = [load(d) for d in a.clean]
    clean = [t for tests, _ in clean_runs for t in tests]
    run_dir = a.from_run or run_loaded(a.spin, a.extra)
    loaded, cores = load(run_dir)
    print(f"loaded run {run_dir.name}: {len(loaded)} tests ran")
    for t in loaded:
        values = ", ".join(f"{k} {measured(t, k)}" for k in KEYS)
        mark = " (marked overloaded)" if t.get("environment") == "overloaded" else ""
        print(f"  {t['outcome']:7} {t['name']}: {values}{mark}")
    for key in KEYS:
        print(f"{key}: clean {quantiles([x for t in clean if (x := measured(t, key)) is not None])}; "
              f"loaded {quantiles([x for t in loaded if (x := measured(t, key)) is not None])}")
    marked_clean = sum(len(would_mark(tests, c, thresholds)) for tests, c in clean_runs)
    print(f"thresholds: runnable tasks per core >= {thresholds.runnable:g}, or other processes and steal >= "
          f"{thresholds.foreign:g} of the cores: they would mark a failure of "
          f"{len(would_mark(loaded, cores, thresholds))} of the loaded run's {len(loaded)} tests and of "
          f"{marked_clean} of the clean runs' {len(clean)}")
    failed = [t for t in loaded if t["outcome"] == "failed"]
    unmarked = [t["name"] for t in failed if t.get("environment") != "overloaded"]
    print(f"loaded run: {len(failed)} failed, {len(failed) - len(unmarked)} marked overloaded, {len(unmarked)} not "
          f"marked{': ' + ', '.join(unmarked) if unmarked else ''}")
    return 1 if unmarked else 0


if __name__ == "__main__":
    sys.exit(main())
