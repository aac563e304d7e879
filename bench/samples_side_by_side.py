"""Prints the runs of bench/upstream_samples.py on two providers side by side: per sample, its outcome on each
(reached, failed, skipped) and, where they differ or failed, the first line of each cause; then reached/attempted
per provider, and how the samples both attempted compare: the same outcome on both, or reached on one only (with
how many of those failed on the other because its nodes are too small: a property of the machine, not of the
provider).

    .venv/bin/python bench/samples_side_by_side.py --a local LOG [LOG ...] --b kind LOG [LOG ...]

Each side reads one or more logs of upstream_samples.py in order; a later log's line for a sample replaces an
earlier one (a rerun of some samples with `--only`).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

RESULT = re.compile(r"^  (REACHED|FAILED ) (\S+) \((\d+)s\)$")
SKIP = re.compile(r"^  skip (\S+): (.*)$")
CAPACITY = re.compile(r"the largest schedulable node has|the schedulable nodes have|no schedulable node has that left")


def read(logs: list[str]) -> dict[str, tuple[str, str]]:
    """sample -> (outcome, cause), the later logs winning."""
    out: dict[str, tuple[str, str]] = {}
    for log in logs:
        lines = Path(log).read_text().splitlines()
        for i, line in enumerate(lines):
            if m := RESULT.match(line):
                outcome = m.group(1).strip().lower()
                cause = lines[i + 1].strip() if outcome == "failed" and i + 1 < len(lines) else ""
                if cause.startswith("not reached") and i + 2 < len(lines) and lines[i + 2].startswith("      "):
                    cause += " | " + lines[i + 2].strip()  # the first Pod or event says why
                out[m.group(2)] = (outcome, cause)
            elif m := SKIP.match(line):
                out[m.group(1)] = ("skipped", m.group(2))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", nargs="+", required=True, metavar=("NAME", "LOG"))
    ap.add_argument("--b", nargs="+", required=True, metavar=("NAME", "LOG"))
    a = ap.parse_args(argv)
    if len(a.a) < 2 or len(a.b) < 2:
        ap.error("each side is a name and at least one log")
    for log in a.a[1:] + a.b[1:]:
        if not Path(log).is_file():
            ap.error(f"no such log: {log}")
    (na, ra), (nb, rb) = (a.a[0], read(a.a[1:])), (a.b[0], read(a.b[1:]))
    width = max(len(s) for s in ra | rb)
    print(f"{'sample':<{width}}  {na:<8} {nb:<8}")
    for sample in sorted(ra | rb):
        oa, ca = ra.get(sample, ("-", ""))
        ob, cb = rb.get(sample, ("-", ""))
        if oa == ob == "skipped":
            continue
        print(f"{sample:<{width}}  {oa:<8} {ob:<8}")
        for name, outcome, cause in ((na, oa, ca), (nb, ob, cb)):
            if outcome == "failed" or (outcome == "skipped" and oa != ob):
                print(f"{'':<{width}}    {name}: {cause[:300]}")
    for name, r in ((na, ra), (nb, rb)):
        attempted = [o for o, _ in r.values() if o in ("reached", "failed")]
        print(f"{name}: reached/attempted {attempted.count('reached')}/{len(attempted)} "
              f"(skipped {sum(o == 'skipped' for o, _ in r.values())})")
    print(agreement(na, ra, nb, rb))
    return 0


def agreement(na: str, ra: dict, nb: str, rb: dict) -> str:
    """One line: of the samples both sides attempted, how many ended alike, and how many reached on one side only
    (and of those, how many failed on the other for its nodes' size)."""
    both = [s for s in ra.keys() & rb.keys() if {ra[s][0], rb[s][0]} <= {"reached", "failed"}]
    same = sum(ra[s][0] == rb[s][0] for s in both)
    parts = [f"both attempted {len(both)}: same outcome {same}"]
    for name, won, lost in ((na, ra, rb), (nb, rb, ra)):
        only = [s for s in both if won[s][0] == "reached" and lost[s][0] == "failed"]
        small = sum(bool(CAPACITY.search(lost[s][1])) for s in only)
        parts.append(f"reached on {name} only {len(only)} ({small} of them for node size)")
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
