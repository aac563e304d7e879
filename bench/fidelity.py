"""The fidelity table: the same suite on the local test bed and on kind, side by side.

For each test: its outcome and wall time on local and on kind (and whether the outcomes differ); then each
run's wall time and cluster bring-up (kind's by step: engine, node image load, `kind create cluster`, image
loads), and the cold build times of kind's node image, application images and tools as the builders recorded
them in the tool cache (`$RAYCONF_CACHE/logs/build-times.tsv`, one line per real build, newest first).

    .venv/bin/python bench/fidelity.py LOCAL KIND        # each a run directory or its conformance-report.yaml
    .venv/bin/python bench/fidelity.py --run-kind LOCAL  # runs the suite on kind first (~20 min), then prints
    .venv/bin/python bench/fidelity.py --run-local KIND  # runs it on the local bed first, under the bed's lock

Bad input (a missing or unreadable report) is one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("RAYCONF_CACHE", "/var/cache/rayconformance"))
BED_LOCK = "/tmp/rc-bed.lock"  # the local test bed exists once per machine


class BenchError(Exception):
    pass


def load_report(arg: str) -> tuple[Path, dict]:
    path = Path(arg)
    if path.is_dir():
        path = path / "conformance-report.yaml"
    try:
        report = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise BenchError(f"cannot read a conformance report at {path}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        raise BenchError(f"{path} is not a conformance report (no `tests` list)")
    return path, report


def run_suite(provider: str, jobs: int) -> str:
    """Run the whole suite on `provider`; return its run directory."""
    run_id = f"bench-fidelity-{provider}-{time.strftime('%Y%m%d-%H%M%S')}"
    argv = [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-q", "-n", str(jobs),
            "--provider", provider, "--run-id", run_id]
    if provider == "local":
        argv = ["flock", BED_LOCK, *argv]
    print(f"fidelity: running the suite on {provider} ({run_id})", file=sys.stderr, flush=True)
    subprocess.run(argv, cwd=ROOT, stdout=sys.stderr, stderr=sys.stderr)
    return str(ROOT / "reports" / run_id)


def seconds(v) -> str:
    return "-" if v is None else f"{float(v):.1f}"


def tests_table(local: dict, kind: dict) -> list[str]:
    by_l = {t["name"]: t for t in local["tests"]}
    by_k = {t["name"]: t for t in kind["tests"]}
    names = sorted(set(by_l) | set(by_k), key=lambda n: (by_l.get(n) or by_k[n]).get("nodeid", n))
    width = max([len(n) for n in names] + [4])
    rows = [f"{'test':<{width}}  {'local':<8} {'s':>7}  {'kind':<8} {'s':>7}  {'kind/local':>10}  same",
            "-" * (width + 56)]
    for n in names:
        lt, kt = by_l.get(n, {}), by_k.get(n, {})
        lo, ko = lt.get("outcome", "absent"), kt.get("outcome", "absent")
        ls, ks = lt.get("durationSeconds"), kt.get("durationSeconds")
        ratio = f"{ks / ls:.1f}x" if ls and ks else "-"
        rows.append(f"{n:<{width}}  {lo:<8} {seconds(ls):>7}  {ko:<8} {seconds(ks):>7}  {ratio:>10}  "
                    f"{'-' if 'absent' in (lo, ko) else 'yes' if lo == ko else 'NO'}")
    return rows


def outcome_counts(report: dict) -> str:
    counts: dict[str, int] = {}
    for t in report["tests"]:
        counts[t.get("outcome", "?")] = counts.get(t.get("outcome", "?"), 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def run_summary(label: str, path: Path, report: dict) -> list[str]:
    c = report.get("cluster") or {}
    details = c.get("details") or {}
    rows = [f"{label}: {path.parent.name}  {outcome_counts(report)}; wall {seconds(report.get('wallSeconds'))} s; "
            f"cluster {c.get('name')} ({c.get('kubernetesVersion')}, {c.get('nodes')} nodes) "
            f"up in {seconds(c.get('bringupSeconds'))} s" + (" (reused)" if details.get("reused") else "")]
    phases = details.get("phases")
    if phases:
        rows.append(f"  {label} bring-up steps (s): " + ", ".join(f"{k} {seconds(v)}" for k, v in phases.items()))
    return rows


def build_times(cache: Path) -> list[str]:
    """The newest recorded real build of each thing the kind path builds."""
    f = cache / "logs" / "build-times.tsv"
    try:
        lines = f.read_text().splitlines()
    except OSError:
        return [f"cold builds: none recorded in {f} (the builders record a build there when they really build, not "
                "when cached)"]
    newest: dict[str, list[str]] = {}
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 4:  # one row per image for app images (their version column names the image)
            newest[f"{parts[1]} {parts[2]}" if parts[1] == "app-image" else parts[1]] = parts  # later lines win
    if not newest:
        return [f"cold builds: none recorded in {f}"]
    rows = [f"cold builds (newest of each, from {f}):"]
    for what in sorted(newest, key=lambda w: (not w.startswith("node-image"), not w.startswith("app-image"), w)):
        when, kind, version, secs = newest[what]
        rows.append(f"  {kind:<20} {secs:>6} s  {version:<44} {when}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="*", help="LOCAL KIND run directories or reports (one with --run-kind/--run-local)")
    ap.add_argument("--run-kind", action="store_true", help="run the suite on kind first; the one report is LOCAL")
    ap.add_argument("--run-local", action="store_true", help="run the suite on the local bed first (under "
                                                              f"{BED_LOCK}); the one report is KIND")
    ap.add_argument("--jobs", type=int, default=3, help="parallel workers for a run (default 3)")
    ap.add_argument("--cache", default=str(CACHE), help=f"the tool cache (default {CACHE})")
    a = ap.parse_args(argv)
    try:
        want = 1 if (a.run_kind or a.run_local) else 2
        if a.run_kind and a.run_local:
            want = 0
        if len(a.reports) != want:
            raise BenchError(f"expected {want} report path(s), got {len(a.reports)}: LOCAL KIND, or one with "
                             "--run-kind (LOCAL) or --run-local (KIND)")
        given = list(a.reports)
        local_arg = run_suite("local", a.jobs) if a.run_local else given.pop(0)
        kind_arg = run_suite("kind", a.jobs) if a.run_kind else given.pop(0)
        (lp, local), (kp, kind) = load_report(local_arg), load_report(kind_arg)
    except BenchError as e:
        print(f"fidelity: {e}", file=sys.stderr)
        return 2
    out = tests_table(local, kind)
    out += [""] + run_summary("local", lp, local) + run_summary("kind", kp, kind)
    out += [""] + build_times(Path(a.cache))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
