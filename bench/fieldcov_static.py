"""What the suite's declarations would assert of the ray.io CRDs if every test ran: a run's field coverage read
from the sources, without a cluster (the `covers` markers and `ctx.covers` calls of conformance/, the
`@record.covers`/`record.declare` of the must-holds, conformance/field-assertions.yaml), against KubeRay v1.7.0's
CRDs kept for the unit tests. A real run counts only the tests that ran; this is the ceiling it can reach.

    .venv/bin/python bench/fieldcov_static.py                    # this checkout
    .venv/bin/python bench/fieldcov_static.py --root /tmp/older   # another checkout (a worktree of an older commit)
    .venv/bin/python bench/fieldcov_static.py --uncovered RayJob  # and the fields of a CRD no declaration asserts
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import yaml

from rayconformance.fieldcov import assertions_file, coverage
from rayconformance.fieldcov.paths import PathError, parse

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "tests" / "unit" / "data" / "fieldcov"
DECLARING = ("covers", "declare")


def _strings(call: ast.Call) -> list[str]:
    return [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def declared_in_sources(root: Path) -> set[str]:
    """Every field a source under conformance/ or fixtures/ declares with a literal `Kind:path`."""
    found = set()
    for folder in ("conformance", "fixtures"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and \
                        getattr(node.func, "attr", getattr(node.func, "id", None)) in DECLARING:
                    found |= {s for s in _strings(node) if ":" in s}
    return found


def declared_in_file(root: Path) -> set[str]:
    listed = assertions_file.load(root)
    return {f for fields in listed.entries.values() for f in fields}


def valid(names: set[str]) -> set[str]:
    out = set()
    for n in names:
        try:
            parse(n)
        except PathError:
            continue
        out.add(n)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="a rayconformance checkout (default: this one)")
    parser.add_argument("--uncovered", metavar="KIND", help="also list the fields of KIND no declaration asserts")
    args = parser.parse_args()
    crds = [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("ray.io_*.yaml"))]
    declared = valid(declared_in_sources(args.root) | declared_in_file(args.root))
    section = coverage.section(crds, set(), declared)
    print(f"declared fields: {len(declared)} (checkout {args.root})")
    for row in section["crds"]:
        counted = row["fields"] - row["excluded"]
        print(f"{row['kind']:<11} asserted {row['asserted']:>4} of {counted:>4} ({row['assertedPercent']}%), "
              f"{row['excluded']} excluded")
        if args.uncovered == row["kind"]:
            print("  " + "\n  ".join(row["uncovered"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
