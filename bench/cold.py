"""Measures a cold `make conformance`: a fresh clone of this checkout, with empty caches (the tool cache, Go's build
and module caches, pip's cache), set up step by step and then run as a user runs it. Prints the time of each setup
step, of the suite run (with the builds it does on first use: the profile's operator, the Gateway implementation),
the run's outcomes, the sum of its test durations and the machine's peak memory use. The setup steps are the
Makefile's (`setup-base`'s prerequisites, each run as `make <target>` with the run's CONFORMANCE_ARGS), each
followed by the parts its output times (each Go build, the modules fetched ahead, the Ray virtualenv made beside
them).

    .venv/bin/python bench/cold.py [--workdir /var/tmp/rc-cold] [--keep] [-- <CONFORMANCE_ARGS>]

Debian packages and the Go toolchain already on the machine are reused (their step is timed all the same). The clone
and the cold caches are removed afterwards unless --keep; the output stays in reports/. Needs the machine to itself:
it brings up the one local bed.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import MemorySampler  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

SETUP_TARGET = "setup-base"  # what `make conformance` sets up first: its prerequisites are the bench's steps
STEP_NAMES = {"deps": "Debian packages", "venv": "project venv",
              "tools-base": "bed base (Go builds); beside it the project venv, the run's Ray venv, modules fetched"}
# lines of a step's output that time a part of it (build-tools.sh, ray-venv.sh)
PART = re.compile(r"^(?:build-tools: (?P<built>.+?) built in (?P<bs>\d+)s"
                  r"|build-tools: (?P<ahead>.+?) modules fetched ahead in (?P<as>\d+)s"
                  r"|ray-venv: ray (?P<ray>\S+) ready in (?P<rs>\d+)s"
                  r"|venv: project venv ready in (?P<vs>\d+)s)")


def setup_steps(makefile: Path = ROOT / "Makefile") -> list[tuple[str, list[str]]]:
    """`make conformance`'s setup, as the Makefile has it: one `make <target>` per prerequisite of setup-base."""
    for line in makefile.read_text().splitlines():
        if line.startswith(f"{SETUP_TARGET}:"):
            return [(STEP_NAMES.get(t, t), ["make", t]) for t in line.split(":", 1)[1].split()]
    raise SystemExit(f"bench: no {SETUP_TARGET} target in {makefile}")


def parts(output: str) -> list[str]:
    """The timed parts a step's output names, e.g. `etcd built in 118s`."""
    out = []
    for line in output.splitlines():
        m = PART.match(line.split(" ", 1)[1] if re.match(r"^\d\d:\d\d:\d\d ", line) else line)
        if m and m["built"]:
            out.append(f"{m['built']}: built in {m['bs']}s")
        elif m and m["ahead"]:
            out.append(f"{m['ahead']}: modules fetched ahead (in the background) in {m['as']}s")
        elif m and m["ray"]:
            out.append(f"Ray {m['ray']} venv: ready in {m['rs']}s (beside the Go builds)")
        elif m and m["vs"]:
            out.append(f"project venv: ready in {m['vs']}s (beside the Go builds)")
    return out


def cold_env(workdir: Path) -> dict:
    env = dict(os.environ)
    env.update(RAYCONF_CACHE=str(workdir / "cache"), GOCACHE=str(workdir / "go-build"),
               GOMODCACHE=str(workdir / "go-mod"), PIP_CACHE_DIR=str(workdir / "pip"))
    env["PATH"] = f"/usr/local/go/bin:{env.get('PATH', '')}"
    return env


def timed(argv: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, int]:
    started = time.monotonic()
    with log.open("ab") as out:
        rc = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    return time.monotonic() - started, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=Path(f"/var/tmp/rc-cold-{time.strftime('%Y%m%d-%H%M%S')}"))
    ap.add_argument("--keep", action="store_true", help="keep the clone and the cold caches")
    ap.add_argument("args", nargs="*", help="CONFORMANCE_ARGS for the run (after --)")
    a = ap.parse_args(argv)
    from rayconformance.clusters.local.paths import cache_problem

    if cache_problem(a.workdir / "cache"):
        raise SystemExit(f"bench: {cache_problem(a.workdir / 'cache')}; pass a --workdir outside /tmp")
    if a.workdir.exists():
        raise SystemExit(f"bench: {a.workdir} exists; pass a new --workdir or remove it")
    a.workdir.mkdir(parents=True)
    repo, env = a.workdir / "repo", cold_env(a.workdir)
    log = ROOT / "reports" / f"{a.workdir.name}.log"
    log.parent.mkdir(exist_ok=True)
    print(f"bench: cold clone and caches in {a.workdir}; output in {log}", flush=True)
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
        total = 0.0
        run_id = f"bench-cold-{time.strftime('%Y%m%d-%H%M%S')}"
        conformance_args = shlex.join(["--run-id", run_id, *a.args])
        for name, step in setup_steps(repo / "Makefile"):
            before = log.stat().st_size if log.exists() else 0
            seconds, rc = timed([*step, f"CONFORMANCE_ARGS={conformance_args}"], repo, env, log)
            total += seconds
            print(f"setup {name} (make {step[-1]}): {seconds:.0f}s" + (f" (exit {rc})" if rc else ""), flush=True)
            with log.open("rb") as f:
                f.seek(before)
                for part in parts(f.read().decode(errors="replace")):
                    print(f"  {part}", flush=True)
            if rc:
                raise SystemExit(f"bench: setup step {name} failed; see {log}")
        with MemorySampler() as mem:
            seconds, rc = timed(["make", "conformance", f"CONFORMANCE_ARGS={conformance_args}"], repo, env, log)
        print(f"make conformance (setup done): {seconds:.0f}s, exit {rc}; peak memory used {mem.peak / 2**30:.1f} GiB")
        print(f"cold make conformance in all: {total + seconds:.0f}s ({total:.0f}s setup before the run)")
        report_dir = repo / "reports" / run_id
        report_path = report_dir / "conformance-report.yaml"
        if report_path.is_file():
            report = yaml.safe_load(report_path.read_text())
            tests = report["tests"]
            busy = sum(t["durationSeconds"] for t in tests if t["outcome"] != "skipped")
            failed = [t["name"] for t in tests if t["outcome"] == "failed"]
            wall = report.get("wallSeconds") or seconds
            print(f"suite: {sum(t['outcome'] == 'passed' for t in tests)} passed, {len(failed)} failed {failed or ''}, "
                  f"{sum(t['outcome'] == 'skipped' for t in tests)} skipped; report wall {wall}s, sum of test "
                  f"durations {busy:.0f}s, ratio {busy / wall:.2f}; bring-up {report['cluster'].get('bringupSeconds')}s, "
                  f"operator install (with its build) {report['operator'].get('installSeconds')}s")
            kept = ROOT / "reports" / run_id
            shutil.copytree(report_dir, kept, dirs_exist_ok=True)
            print(f"report copied to {kept}")
        else:
            print(f"bench: the run wrote no report; see {log}")
        return rc
    finally:
        if not a.keep:
            shutil.rmtree(a.workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
