"""`python -m rayconformance verify REPORT_DIR...`: check submitted reports against this checkout of the suite
(fixtures/certify.py). Exit 0 when every report verifies, 1 when one does not, 2 on bad usage."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rayconformance")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="check reports/<run-id> directories against this suite")
    verify.add_argument("run_dirs", nargs="+", type=Path, metavar="REPORT_DIR")
    args = parser.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
