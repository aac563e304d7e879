"""Deliberate breaks, verified a batch at a time. Every break case once takes some 18 hours on 2 cores; the ledger
(tests/breaks/ledger.json, see bench/breaks_ledger.py) keeps what each case's last run showed, so each sitting runs
the cases that never ran, whose inputs changed, or that last did not fail, within a time budget (`--all`: a full
pass, verified cases too, since the digest does not cover the fixtures, samples and profiles a case goes through).

    .venv/bin/python bench/breaks.py status [--list]      # how many cases are verified as they stand
    .venv/bin/python bench/breaks.py run --minutes 60 [-k TEXT] [--all] [--dry-run]
    .venv/bin/python bench/breaks.py rekey [--dry-run]    # entries of digest scheme 1 to 2 (bench/breaks_rekey.py)

`run` goes through `pytest tests/breaks` (the local-gpu bed, taken under the bed lock) and prints the status after.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import breaks_ledger  # noqa: E402

GUESS_SECONDS = 300  # a case that never ran, before any has: about what one takes (install, one test, a timeout)
SHARED_SECONDS = 60  # what a case saves when it shares the suite session (and install) of an earlier one
ORDER = ("never-run", "stale", "did-not-fail", "wrong-message", "error", "skipped", "verified")


def collected() -> list[str]:
    """The break cases' pytest node ids."""
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/breaks", "--collect-only", "-q", "-p", "no:cacheprovider"],
                       cwd=ROOT, capture_output=True, text=True)
    ids = [ln.strip() for ln in r.stdout.splitlines() if "::test_conformance_test_fails_when_behavior_is_broken[" in ln]
    if not ids:
        raise SystemExit(f"breaks: no break case collected (pytest exit {r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}")
    return ids


def cases() -> list[tuple[str, str, tuple | None]]:
    """(nodeid, digest, session key) of every case, matched by the case's id. The session keys are those of all
    cases run at once; a batch's own may group its cases a little differently (an estimate only)."""
    from tests.breaks.harness import declared_samples, session_keys
    from tests.breaks.test_breaks import CASES
    by_id = {case.id: case for case in CASES}
    keys = session_keys(CASES, declared_samples())
    ids = collected()
    unknown = [n for n in ids if breaks_ledger.case_id(n) not in by_id]
    if unknown or len(ids) != len(by_id):
        raise SystemExit(f"breaks: {len(ids)} node ids collected for {len(by_id)} cases"
                         + (f"; no case has the id of {unknown[0]}" if unknown else ""))
    return [(nodeid, breaks_ledger.digest(case), keys[case.id])
            for nodeid in ids for case in [by_id[breaks_ledger.case_id(nodeid)]]]


def table(ledger: dict, all_cases: list[tuple[str, str, tuple | None]]) -> list[tuple]:
    """(state, nodeid, digest, ledger entry, session key) of every case."""
    rows = []
    for nodeid, d, key in all_cases:
        entry = ledger.get(breaks_ledger.case_id(nodeid))
        rows.append((breaks_ledger.state(entry, d), nodeid, d, entry, key))
    return rows


def print_status(rows, listing: bool) -> None:
    counts = Counter(s for s, *_ in rows)
    print(f"breaks: {counts['verified']} of {len(rows)} cases verified as they stand "
          f"({', '.join(f'{counts[s]} {s}' for s in ORDER if counts[s] and s != 'verified') or 'no other'})")
    seconds = [e["seconds"] for s, _, _, e, _ in rows if e]
    if seconds:
        left = sum(cost for _, cost in costed((r for r in rows if r[0] != "verified"), guess(rows)))
        print(f"breaks: a case took {sum(seconds) / len(seconds) / 60:.1f} min on average; "
              f"the cases not verified need about {left / 3600:.1f} h")
    if listing:
        for s, nodeid, _, e, _ in sorted(rows, key=lambda r: ORDER.index(r[0])):
            extra = f" ({e['commit']}, {e['date'][:10]}, {e['seconds']} s){': ' + e['message'] if s != 'verified' and e.get('message') else ''}" if e else ""
            print(f"  {s:<12} {breaks_ledger.case_id(nodeid)}{extra}")


def guess(rows) -> float:
    """What a case that never ran is expected to take: the average of those that ran."""
    seconds = [r[3]["seconds"] for r in rows if r[3] and r[3].get("seconds")]
    return sum(seconds) / len(seconds) if seconds else GUESS_SECONDS


def costed(rows, first_guess: float = GUESS_SECONDS) -> list[tuple[tuple, float]]:
    """The rows in the order to run them (never run first, then stale, then those whose last run was not a failure
    as required; the cases sharing an install side by side), each with its expected seconds: its last run's, or
    `first_guess`, less what it saves by sharing the session of the case before it."""
    rows = sorted(rows, key=lambda r: ORDER.index(r[0]))
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(r[4] if r[4] is not None else r[1], i)
    rows.sort(key=lambda r: first[r[4] if r[4] is not None else r[1]])
    out, seen = [], set()
    for r in rows:
        shared = r[4] is not None and r[4] in seen
        seen.add(r[4])
        out.append((r, (r[3] or {}).get("seconds") or max(first_guess - (SHARED_SECONDS if shared else 0), 30)))
    return out


def choose(rows, minutes: float) -> list[tuple[str, str]]:
    """The cases to run next, in `costed` order, as many as fit the budget (at least one)."""
    chosen, spent = [], 0.0
    for (s, nodeid, d, e, key), cost in costed((r for r in rows if r[0] != "verified"), guess(rows)):
        if chosen and spent + cost > minutes * 60:
            break  # in order: a cheaper case further down does not jump the queue
        chosen.append((nodeid, d))
        spent += cost
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("status")
    st.add_argument("--list", action="store_true", help="one line per case")
    rn = sub.add_parser("run")
    rn.add_argument("--minutes", type=float, default=60, help="time budget, from earlier runs' durations")
    rn.add_argument("-k", dest="keyword", default="", help="only cases whose id contains this text (a comma list: "
                                                          "any of these)")
    rn.add_argument("--all", action="store_true", help="verified cases too (a full pass: the digest does not cover "
                                                         "the fixtures, samples and profiles a case goes through)")
    rn.add_argument("--dry-run", action="store_true", help="say which cases would run")
    rk = sub.add_parser("rekey", help="re-key scheme-1 entries to the test's own code (bench/breaks_rekey.py)")
    rk.add_argument("--dry-run", action="store_true", help="count, write nothing")
    args = ap.parse_args(argv)
    if args.cmd == "rekey":
        from bench import breaks_rekey
        from tests.breaks.test_breaks import CASES
        ledger = breaks_ledger.load()
        counts = breaks_rekey.rekey(ledger, CASES)
        print("breaks: " + ", ".join(f"{n} {what}" for what, n in counts.items()) + (" (dry run)" if args.dry_run else ""))
        if not args.dry_run:
            breaks_ledger.save(ledger)
        print_status(table(breaks_ledger.load() if not args.dry_run else ledger, cases()), listing=False)
        return 0

    rows = table(breaks_ledger.load(), cases())
    if args.cmd == "status":
        print_status(rows, args.list)
        return 0
    if args.keyword:
        rows = [r for r in rows if any(k in breaks_ledger.case_id(r[1]) for k in args.keyword.split(","))]
    if args.all:
        rows = [("stale" if s == "verified" else s, n, d, e, k) for s, n, d, e, k in rows]
    chosen = choose(rows, args.minutes)
    if not chosen:
        print("breaks: every selected case is verified as it stands")
        return 0
    print(f"breaks: running {len(chosen)} case(s) within {args.minutes:g} min:")
    for nodeid, _ in chosen:
        print(f"  {breaks_ledger.case_id(nodeid)}")
    if args.dry_run:
        return 0
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(dict(chosen), f)
    env = {**os.environ, breaks_ledger.DIGESTS_ENV: f.name}
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", *(n for n, _ in chosen), "-v", "-p", "no:cacheprovider",
                               "-p", "bench.breaks_ledger"], cwd=ROOT, env=env)
    finally:
        os.unlink(f.name)
    print_status(table(breaks_ledger.load(), cases()), listing=False)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
