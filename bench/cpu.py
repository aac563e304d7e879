"""Where the CPU goes: runs the conformance suite (or a selection) on the local bed or on kind while a separate process
samples /proc every period, then prints CPU-seconds per component (Ray's processes by kind, the operator, the control
plane, the node agent, the test process and its load generators), the tests that used the most with their Ray/harness
split, and the run's total against the machine's capacity (cores x wall). The numbers also go to
`reports/<run>/cpu.json`, beside the run's report; the raw samples to `cpu-samples.jsonl.gz`. Each run goes to the
clean-run count (bench/runs_ledger.py).

    .venv/bin/python bench/cpu.py [--jobs auto|N] [--period 1] [--top 15] [-- <pytest args, e.g. -k provisioning>]
    .venv/bin/python bench/cpu.py --from reports/<run>      # account a recorded run again

Needs root (other users' /proc/<pid>/environ tells which Pod or bed a process belongs to). How processes are
classified: bench/cpu_classify.py; the arithmetic and its bounds: bench/cpu_account.py.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

import cpu_account
import cpu_classify as cc
import runs_ledger

ROOT = Path(__file__).resolve().parents[1]
SAMPLES, MARKS, OUTPUT = "cpu-samples.jsonl.gz", "cpu-marks.jsonl", "cpu.json"
REPORT = "conformance-report.yaml"


def jobs_arg(value: str) -> str:
    """`auto` (as the Makefile's JOBS: src/rayconformance/run/workers.py) or a positive count."""
    if value != "auto" and not (value.isdigit() and int(value) >= 1):
        raise argparse.ArgumentTypeError(f"{value}: use auto or a count of at least 1")
    return value


def option(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def suite_paths(args: list[str]) -> list[str]:
    """What pytest collects: the test paths among `args` (files or node ids under conformance/, as the suite's own
    command line takes them), else the whole of conformance/."""
    given = [a for a in args if not a.startswith("-") and a.split("::")[0].startswith("conformance/")
             and (ROOT / a.split("::")[0]).exists()]
    return [] if given else ["conformance"]


def run_suite(run_dir: Path, run_id: str, jobs: str, period: float, extra: list[str]) -> int:
    """Runs pytest with the sampler beside it; returns pytest's exit code."""
    run_dir.mkdir(parents=True, exist_ok=True)
    samples = run_dir / SAMPLES
    sampler = subprocess.Popen([sys.executable, str(Path(__file__).with_name("cpu_sampler.py")), "--out",
                                str(samples), "--period", str(period)], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (samples.is_file() and samples.stat().st_size) and sampler.poll() is None:
            if time.monotonic() > deadline:
                raise SystemExit("bench/cpu: the sampler wrote nothing in 30 s")
            time.sleep(0.05)
        if sampler.poll() is not None:
            raise SystemExit(f"bench/cpu: the sampler exited ({sampler.returncode}) before the run started")
        argv = [sys.executable, "-m", "pytest", *suite_paths(extra), "-p", "no:cacheprovider", "-p", "bench.cpu_marks",
                "-n", str(jobs), *([] if option(extra, "--run-id") else ["--run-id", run_id]), *extra]
        env = {**os.environ, "RAYCONF_CPU_RUN": run_id, "RAYCONF_CPU_MARKS": str(run_dir / MARKS)}
        print(f"bench/cpu: {' '.join(argv[1:])}", flush=True)
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops pytest (same process group), not us
        try:
            return subprocess.run(argv, cwd=ROOT, env=env).returncode
        finally:
            signal.signal(signal.SIGINT, old)
    finally:
        sampler.terminate()
        sampler.wait()


def load_run(run_dir: Path) -> tuple[cpu_account.Result, dict | None]:
    header, samples = cpu_account.read_samples(run_dir / SAMPLES)
    report = None
    if (run_dir / REPORT).is_file():
        try:
            report = yaml.safe_load((run_dir / REPORT).read_text())
        except yaml.YAMLError as e:
            sys.exit(f"bench/cpu: cannot read {run_dir / REPORT}: {e}")
    tests = [t for t in (report or {}).get("tests", []) if t.get("outcome") != "skipped"]
    result = cpu_account.account(header, samples, tests, cpu_account.read_marks(run_dir / MARKS))
    if report is None:
        result.notes.append(f"no {REPORT} in {run_dir}: no per-test accounting")
    return result, report


def pct(part: float, whole: float) -> float:
    return 100 * part / whole if whole else 0.0


def render(r: cpu_account.Result, report: dict | None, top: int) -> str:
    run = r.run_cpu
    order = {g: i for i, g in enumerate((*cc.RAY_GROUPS, *cc.BED_HARNESS_GROUPS, *cc.SETUP_GROUPS, *cc.NOT_RUN_GROUPS))}
    rows = sorted(r.components.items(), key=lambda kv: (order.get(cc.group(kv[0]), 99), -kv[1]))
    out = [f"{'component':<38} {'CPU-s':>9} {'% of run':>9}"]
    for comp, secs in rows:
        if cc.in_run(comp):
            out.append(f"{comp:<38} {secs:9.1f} {pct(secs, run):9.1f}")
    ray_op = sum(v for c, v in r.components.items() if cc.group(c) in cc.RAY_GROUPS)
    out.append(f"{'= Ray + operator':<38} {ray_op:9.1f} {pct(ray_op, run):9.1f}")
    out.append(f"{'= bed + harness':<38} {r.bed_harness_cpu:9.1f} {pct(r.bed_harness_cpu, run):9.1f}")
    if r.setup_cpu:
        out.append(f"{'= first-use builds':<38} {r.setup_cpu:9.1f} {pct(r.setup_cpu, run):9.1f}")
    outside = ", ".join(f"{c} {v:.1f}" for c, v in rows if not cc.in_run(c))
    out.append(f"not the run (CPU-s): {outside or 'nothing'}")
    out.append(f"machine: {r.machine_busy:.1f} CPU-s busy (/proc/stat), {r.machine_busy - r.attributed:.1f} of them "
               f"attributed to no process (interrupts, steal, exits no sampled parent reaped); {r.recovered:.1f} "
               f"recovered from parents' child times")
    durations = {t["name"]: t.get("durationSeconds", 0.0) for t in (report or {}).get("tests", [])}
    ranked = sorted(r.tests.items(), key=lambda kv: -sum(kv[1].values()))[:top]
    if ranked:
        out.append("")
        out.append(f"{'test':<52} {'CPU-s':>7} {'Ray':>7} {'harness':>8} {'other':>7} {'wall s':>7}")
        for name, s in ranked:
            out.append(f"{name[:52]:<52} {sum(s.values()):7.1f} {s['ray']:7.1f} {s['harness']:8.1f} "
                       f"{s['other']:7.1f} {durations.get(name, 0.0):7.1f}")
        out.append("(Ray: the test's Ray Pods; harness: its xdist worker (and children) while it ran the test + its load generators; "
                   "other: its other Pod processes and their node-agent shims)")
    for note in r.notes:
        out.append(f"note: {note}")
    out.append("")
    out.append(f"run: {r.wall:.0f} s wall, {run:.0f} CPU-s of {r.capacity:.0f} CPU-s capacity "
               f"({pct(run, r.capacity):.0f} %), bed+harness {r.bed_harness_share:.0f} %"
               + (f" (of the run's CPU less {r.setup_cpu:.0f} CPU-s of first-use builds)" if r.setup_cpu else "")
               + (f"; peak memory used {r.peak_memory / 2**30:.2f} GiB" if r.peak_memory else ""))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=jobs_arg, default="auto", help="pytest-xdist workers (default: auto, as make)")
    ap.add_argument("--period", type=float, default=1.0, help="seconds between samples (default: 1)")
    ap.add_argument("--top", type=int, default=15, help="how many tests to list (default: 15)")
    ap.add_argument("--from", dest="from_dir", type=Path, help="account a recorded run directory again")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    a = ap.parse_args(argv)
    if a.from_dir:
        run_dir, code = a.from_dir, 0
    else:
        if os.geteuid() != 0:
            sys.exit("bench/cpu: needs root, to read other processes' environment in /proc")
        if a.period <= 0:
            sys.exit("bench/cpu: --period must be positive")
        run_id = option(a.pytest_args, "--run-id") or f"bench-cpu-{time.strftime('%Y%m%d-%H%M%S')}"
        run_dir = ROOT / (option(a.pytest_args, "--report-dir") or "reports") / run_id
        code = run_suite(run_dir, run_id, a.jobs, a.period, a.pytest_args)
    try:
        result, report = load_run(run_dir)
    except cpu_account.SamplesError as e:
        sys.exit(f"bench/cpu: {e}")
    print(render(result, report, a.top))
    (run_dir / OUTPUT).write_text(json.dumps(result.to_json(), indent=1) + "\n")
    print(f"bench/cpu: wrote {run_dir / OUTPUT}" + (f" (pytest exit {code})" if code else ""))
    if not a.from_dir and report is not None:
        runs_ledger.record(run_dir, None, result.peak_memory / 2**30 if result.peak_memory else None, "cpu",
                           exit_code=code)
        print("\n".join(runs_ledger.status_lines(runs_ledger.load())))
    return code


if __name__ == "__main__":
    sys.exit(main())
