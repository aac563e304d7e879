"""The break ledger (tests/breaks/ledger.json): for every deliberate-break case, what its last run showed, when, at
which commit, and on which inputs. A case's inputs are summed up in a digest of the case itself (its fields and
the source of its sample mutations and saboteur), the code of the conformance test it breaks (digest scheme 2: the
test function and the module-level definitions it uses, bench/breaks_testcode.py; scheme 1, before 2026-12-07, took
the whole module, so a change to another test of the module made it stale: `bench/breaks.py rekey`), the Ray
programs that code names, and its patch.
A case is *verified* when its last run showed the conformance test failing as required and its digest is still
the same. The digest leaves out the fixtures the test goes through (its must-holds in testing/expect, the harness),
the samples and the profile: a change there is caught by the next full pass (`bench/breaks.py run --all`), not here.

Also a pytest plugin for bench/breaks.py (`-p bench.breaks_ledger`): with RAYCONF_BREAK_DIGESTS naming a JSON file
of {nodeid: digest}, each case's outcome is written to the ledger as soon as it is known, so a run cut off halfway
keeps what it found."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import subprocess
import time
from pathlib import Path

from bench.breaks_testcode import test_code

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "tests" / "breaks" / "ledger.json"
PATCHES = ROOT / "tests" / "breaks" / "patches"
PROGRAMS = ROOT / "samples" / "programs"
DIGESTS_ENV = "RAYCONF_BREAK_DIGESTS"
LEDGER_ENV = "RAYCONF_BREAK_LEDGER"  # another ledger file (the project's own tests use one of their own)

FAILS = "fails"  # the conformance test failed as its case requires: the break is seen
SCHEME = 2  # what a digest sums up: 2, the test's own code (since 2026-12-07); 1, its whole module


def _source(fn, depth: int = 0) -> str:
    """A callable's source, with the functions it closes over (a saboteur made by a factory names its probe)."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = getattr(fn, "__qualname__", repr(fn))
    if depth < 2:
        for cell in getattr(fn, "__closure__", None) or ():
            inner = cell.cell_contents
            text += "\n" + (_source(inner, depth + 1) if callable(inner) else repr(inner))
    return text


def test_module(test: str, conformance: Path = ROOT / "conformance") -> Path | None:
    pattern = re.compile(rf"^def test_{re.escape(test.split('[')[0])}\(", re.M)
    for path in sorted(conformance.rglob("test_*.py")):
        if pattern.search(path.read_text()):
            return path
    return None


def case_fields(case) -> dict:
    """The case itself as text: its fields, its callables' source."""
    fields = {}
    for f in dataclasses.fields(case):
        value = getattr(case, f.name)
        if f.name in ("variant", "bed") and value is None:
            continue  # fields added later: cases without one keep the digests they were verified with
        if f.name == "samples":
            value = {name: _source(fn) for name, fn in sorted(value.items())}
        elif callable(value):
            value = _source(value)
        fields[f.name] = value
    return fields


def inputs(case, module_text: str | None = None, read=lambda rel: (ROOT / rel).read_text(),
           programs: list[str] | None = None, scheme: int = SCHEME) -> dict:
    """What a case's verdict depends on, as text: by default as the checkout has it; `module_text`, `read` (a
    repository path to its text) and `programs` (the names under samples/programs) give another commit's. Scheme 2
    takes the test's own code (bench/breaks_testcode.py); scheme 1, the digests recorded before it, the whole module."""
    if module_text is None:
        module = test_module(case.test)
        module_text = module.read_text() if module else None
    if programs is None:
        programs = [p.stem for p in sorted(PROGRAMS.glob("*.py"))]
    patches = {p: read(f"tests/breaks/patches/{p}.patch") for p in (case.patch, case.tree_patch) if p}
    code = module_text if scheme == 1 or module_text is None else test_code(case.test, module_text)
    out = {"case": case_fields(case), "module" if scheme == 1 else "test": code, "patches": patches}
    named = {p: read(f"samples/programs/{p}.py") for p in programs
             if re.search(rf"""["']{re.escape(p)}(\.py)?["']""", code or "")}
    if named:  # only then: tests that run no program keep their digests
        out["programs"] = named
    return out


def programs_named(text: str) -> dict[str, str]:
    """The Ray programs (samples/programs/<name>.py) a test's code names, with their text: a case's verdict
    depends on them as on the test."""
    return {p.stem: p.read_text() for p in sorted(PROGRAMS.glob("*.py"))
            if re.search(rf"""["']{re.escape(p.stem)}(\.py)?["']""", text)}


def digest_of(inputs_: dict) -> str:
    return hashlib.sha256(json.dumps(inputs_, sort_keys=True, default=str).encode()).hexdigest()[:16]


def digest(case) -> str:
    return digest_of(inputs(case))


def ledger_path() -> Path:
    return Path(os.environ.get(LEDGER_ENV) or LEDGER)


def load(path: Path | None = None) -> dict[str, dict]:
    path = path or ledger_path()
    return json.loads(path.read_text()) if path.is_file() else {}


def save(ledger: dict[str, dict], path: Path | None = None) -> None:
    path = path or ledger_path()
    lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(ledger.items())]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "conformance", "fixtures", "src", "samples", "profiles", "tests/breaks",
                ":(exclude)tests/breaks/ledger.json")
    return head + ("-dirty" if dirty else "")


def verdict(outcome: str, when: str, message: str = "") -> str:
    """The break case's pytest outcome as what it says about the conformance test: it failed as required (fails),
    it did not fail, it failed with another message (wrong-message), or the case could not run (error)."""
    if outcome == "passed":
        return FAILS
    if outcome == "skipped":
        return "skipped"
    if when != "call":
        return "error"
    if "to FAIL (not pass, not error)" in message:
        return "did-not-fail"
    return "wrong-message" if "the failure message should mention" in message else "error"


def state(entry: dict | None, current: str) -> str:
    """verified, stale (inputs changed since it was verified), never-run, or the last run's verdict."""
    if entry is None:
        return "never-run"
    if entry["verdict"] != FAILS:
        return entry["verdict"]
    return "verified" if entry["digest"] == current else "stale"


def record(nodeid: str, case_digest: str, outcome: str, when: str, seconds: float, message: str,
           path: Path | None = None) -> None:
    ledger = load(path)
    ledger[case_id(nodeid)] = {"digest": case_digest, "scheme": SCHEME, "verdict": verdict(outcome, when, message),
                               "commit": commit(),
                               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "seconds": round(seconds), "message": message[:300]}
    save(ledger, path)


def case_id(nodeid: str) -> str:
    return nodeid[nodeid.index("[") + 1:-1] if "[" in nodeid else nodeid


def _first_line(longrepr) -> str:
    text = str(longrepr or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("E ")]
    return (lines[0][1:].strip() if lines else text.strip().splitlines()[-1] if text.strip() else "")


@functools.lru_cache(maxsize=1)
def _digests(path: str) -> dict[str, str]:
    return json.loads(Path(path).read_text())


def pytest_runtest_logreport(report) -> None:
    path = os.environ.get(DIGESTS_ENV)
    if not path:
        return
    digests = _digests(path)
    if report.nodeid not in digests:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        message = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else \
            _first_line(report.longrepr)
        record(report.nodeid, digests[report.nodeid], report.outcome, report.when, report.duration, message)
