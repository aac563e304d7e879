"""Re-keys the break ledger's entries recorded under digest scheme 1 (the whole test module) to scheme 2 (the test's
own code, bench/breaks_testcode.py), where the inputs each was verified on can be rebuilt exactly from its commit:

- the entry's commit is in the repository and was clean (no `-dirty`);
- the scheme-1 digest of today's case with the module, patches and programs as they were at that commit is the
  recorded one, which proves the case itself is the same and names the module text it ran;
- its scheme-2 digest is then computed from the same inputs and recorded, with the old one kept (`rekeyedFrom`).

A re-keyed case is verified when its test's own code is the same today; one whose test changed stays stale, and one
that cannot be rebuilt keeps its scheme-1 digest (stale until it runs again). Nothing is run.

    .venv/bin/python bench/breaks.py rekey [--dry-run]
"""
from __future__ import annotations

import re
import subprocess

from bench import breaks_ledger


def _git(*args: str) -> tuple[int, str]:
    r = subprocess.run(["git", "-C", str(breaks_ledger.ROOT), *args], capture_output=True, text=True)
    return r.returncode, r.stdout


def _module_at(commit: str, test: str) -> str | None:
    """The text of the conformance module defining `test_<test>` at `commit`."""
    name = re.escape(test.split("[")[0])
    rc, out = _git("grep", "-l", "-E", f"^def test_{name}\\(", commit, "--", "conformance")
    paths = [ln.split(":", 1)[1] for ln in out.splitlines() if ":" in ln]
    if rc != 0 or len(paths) != 1:
        return None
    rc, text = _git("show", f"{commit}:{paths[0]}")
    return text if rc == 0 else None


def rekey_entry(case, entry: dict) -> str | None:
    """The scheme-2 digest of the inputs `entry` was recorded on, or None when they cannot be rebuilt exactly."""
    commit = entry.get("commit", "")
    if not commit or commit.endswith("-dirty") or _git("cat-file", "-e", f"{commit}^{{commit}}")[0] != 0:
        return None
    module_text = _module_at(commit, case.test)
    if module_text is None:
        return None
    rc, listing = _git("ls-tree", "--name-only", f"{commit}:samples/programs")
    programs = [n[:-3] for n in listing.split() if n.endswith(".py")] if rc == 0 else []

    def read(rel: str) -> str:
        code, text = _git("show", f"{commit}:{rel}")
        if code != 0:
            raise FileNotFoundError(rel)
        return text

    try:
        then = {s: breaks_ledger.inputs(case, module_text, read, programs, scheme=s) for s in (1, 2)}
    except FileNotFoundError:
        return None
    if breaks_ledger.digest_of(then[1]) != entry["digest"]:
        return None
    return breaks_ledger.digest_of(then[2])


def rekey(ledger: dict, cases) -> dict[str, int]:
    """Re-keys `ledger` in place; counts of what happened to the scheme-1 entries of failing cases."""
    counts = {"rekeyed, verified": 0, "rekeyed, test changed": 0, "not rebuildable": 0}
    for case in cases:
        entry = ledger.get(case.id)
        if not entry or entry["verdict"] != breaks_ledger.FAILS or "rekeyedFrom" in entry or \
                entry.get("scheme", 1) != 1:
            continue
        current = breaks_ledger.digest(case)
        if entry["digest"] == current:
            continue  # recorded under scheme 2 already
        new = rekey_entry(case, entry)
        if new is None:
            counts["not rebuildable"] += 1
            continue
        entry.update(rekeyedFrom=entry["digest"], digest=new, scheme=2)
        counts["rekeyed, verified" if new == current else "rekeyed, test changed"] += 1
    return counts
