"""`python -m rayconformance.matrix run|report`: the version matrix's command line (see the package docstring).
Bad input is one `error: ...` line and exit status 2."""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

import yaml

from . import MatrixError
from . import __doc__ as PACKAGE_DOC
from .report import HTML, build, cells_from_runs, keep_common_tests, write
from .run import ROOT, plan, run_matrix, target

DEFAULT_PROFILES = ("kuberay-v1.4.2", "kuberay-v1.5.1", "kuberay-v1.6.1", "kuberay-v1.6.2")


def split(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").replace(" ", ",").split(",") if s.strip()]


def jobs(value: str) -> str:
    """`auto` (the suite chooses: src/rayconformance/run/workers.py) or a count of at least 1."""
    if value != "auto" and not (value.isdigit() and int(value) >= 1):
        raise argparse.ArgumentTypeError(f"{value}: use auto or a count of at least 1")
    return value


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m rayconformance.matrix", description=PACKAGE_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the suite over profiles x Ray versions, then write the matrix report")
    r.add_argument("--profiles", default=os.environ.get("MATRIX_PROFILES", ""),
                   help=f"comma list of operator profiles (default: {','.join(DEFAULT_PROFILES)})")
    r.add_argument("--ray", default=os.environ.get("MATRIX_RAY", ""),
                   help="Ray versions: empty = each profile's default, 'all' = each profile's rayVersions, "
                        "or a comma list")
    r.add_argument("--args", default=os.environ.get("MATRIX_ARGS", ""),
                   help="more suite options for every run, e.g. '--core-only' or '-k provisioning'")
    r.add_argument("--provider", default=os.environ.get("MATRIX_PROVIDER") or None,
                   help="the suite's --provider (default: the --cluster definition's, else local)")
    r.add_argument("--cluster", default=os.environ.get("MATRIX_CLUSTER") or None,
                   help="the suite's --cluster definition (default: the provider's own)")
    r.add_argument("--jobs", type=jobs, default=os.environ.get("JOBS") or "auto",
                   help="pytest-xdist workers per run: auto (the suite chooses, as make) or a count")
    r.add_argument("--kubeconfig", help="a local bed already up: every run attaches to it and it is left up "
                                        "(default: bring one up for the matrix and take it down after)")
    r.add_argument("--report-dir", default="reports")
    r.add_argument("--matrix-id", default=None)
    rep = sub.add_parser("report", help="a matrix report from recorded runs (runs nothing)")
    rep.add_argument("runs", nargs="+", type=Path, help="run directories (reports/<run-id>)")
    rep.add_argument("--out", type=Path, default=None, help="directory for the report (default: reports/<matrix id>)")
    rep.add_argument("--matrix-id", default=None)
    rep.add_argument("--common-tests", action="store_true",
                     help="only the tests every run lists (whole-suite runs beside runs of a selection)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    matrix_id = a.matrix_id or f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        if a.command == "report":
            cells = cells_from_runs(a.runs)
            if a.common_tests:
                print(f"matrix: {keep_common_tests(cells)} test(s) common to every run")
            path = write(build(cells, matrix_id), a.out or ROOT / "reports" / matrix_id)[0]
        else:
            cells, skipped = plan(split(a.profiles) or list(DEFAULT_PROFILES), a.ray.strip())
            where, provider_class = target(a.provider, a.cluster, a.kubeconfig)
            path = run_matrix(cells, skipped, (ROOT / a.report_dir / matrix_id).resolve(), matrix_id, where,
                              provider_class.adoptable, shlex.split(a.args), a.jobs)
    except MatrixError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = yaml.safe_load(path.read_text())
    print(f"matrix: {len(report['contradictions'])} contradiction(s) of a profile's claims, "
          f"{len(report['differences'])} feature(s) differing -> {path}, {path.parent / HTML}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
