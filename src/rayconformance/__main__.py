"""The suite's commands besides the pytest run:

    python -m rayconformance verify REPORT_DIR...          check submitted reports against this checkout (certify.py)
    python -m rayconformance verify --published            check every run under reports/published/ (publish.py)
    python -m rayconformance publish REPORT_DIR [--replace] copy a verified run to reports/published/<project>/<version>
    python -m rayconformance merge SHARD_DIR... --out DIR  one report from a sharded run's reports (merge.py)
    python -m rayconformance field-coverage REPORT         a report's field coverage per CRD (fixtures/fieldcov)

Exit 0 on success, 1 when a report does not verify, cannot be published, the shards cannot be merged or a report has
no field coverage, 2 on bad usage."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rayconformance")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="check reports/<run-id> directories against this suite")
    verify.add_argument("run_dirs", nargs="*", type=Path, metavar="REPORT_DIR")
    verify.add_argument("--published", action="store_true",
                        help="check every published run (reports/published/<project>/<version>)")
    publish = sub.add_parser("publish", help="copy a verified run to reports/published/<project>/<version>")
    publish.add_argument("run_dir", type=Path, metavar="REPORT_DIR")
    publish.add_argument("--replace", action="store_true", help="replace a run already published for that version")
    merge = sub.add_parser("merge", help="one report from the reports of --shard K/N runs")
    merge.add_argument("run_dirs", nargs="+", type=Path, metavar="SHARD_DIR")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR")
    coverage = sub.add_parser("field-coverage", help="print a report's field coverage: totals per CRD, then the "
                                                    "fields no test asserted")
    coverage.add_argument("report", type=Path, metavar="REPORT", help="a conformance-report.yaml or its run directory")
    args = parser.parse_args(argv)
    if args.command == "field-coverage":
        return run_field_coverage(args.report)
    if args.command == "merge":
        return run_merge(args.run_dirs, args.out)
    if args.command == "publish":
        return run_publish(args.run_dir, args.replace)
    if args.published == bool(args.run_dirs):
        parser.error("verify: give REPORT_DIR... or --published (not both)")
    if args.published:
        return run_verify_published()

    from rayconformance.fixtures import certify

    failed = 0
    for run_dir in args.run_dirs:
        problems = certify.verify(run_dir)
        for p in problems:
            print(f"{run_dir}: {p}")
        if not problems:
            print(f"{run_dir}: verified")
        failed += bool(problems)
    return 1 if failed else 0


def run_verify_published() -> int:
    from rayconformance import publish

    runs, problems = publish.published_dirs(), publish.check_published()
    for p in problems:
        print(f"{publish.PUBLISHED.name}/{p}")
    print(f"{len(runs)} published run(s) under {publish.PUBLISHED}: "
          + (f"{len(problems)} problem(s)" if problems else "all verified"))
    return 1 if problems else 0


def run_publish(run_dir: Path, replace: bool) -> int:
    from rayconformance import publish

    try:
        target = publish.publish(run_dir, replace=replace)
    except publish.PublishError as e:
        print(f"publish: {e}", file=sys.stderr)
        return 1
    print(f"published {run_dir} as {target}")
    return 0


def run_merge(run_dirs: list[Path], out: Path) -> int:
    from rayconformance.fixtures import merge

    try:
        path = merge.merge(run_dirs, out)
    except merge.MergeError as e:
        print(f"merge: {e}", file=sys.stderr)
        return 1
    print(f"merged {len(run_dirs)} shard reports: {path}")
    return 0


def run_field_coverage(report: Path) -> int:
    from rayconformance.fixtures.fieldcov import show

    try:
        print(show.text(show.load_section(report)))
    except show.ShowError as e:
        print(f"field-coverage: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
