"""The suite is complete in the ways a profile relies on: every conformance test has a deliberate break case
(tests/breaks), a docstring stating its behavior and its samples declared, and every declared feature has a test,
so a profile cannot claim a feature that nothing checks."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rayconformance import features

ROOT = Path(__file__).resolve().parents[2]
LISTED = re.compile(r"^  (\S+) \[([^\]]*)\] ")  # the plugin's --collect-only listing: "  name [A, B] runs"


@pytest.fixture(scope="module")
def collected() -> dict[str, list[str]]:
    """Short test name (with parameters) -> features, as the plugin collects them (no cluster needed)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "conformance", "--all-features",
                        "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"collecting the conformance suite failed:\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    tests = {m.group(1): m.group(2).split(", ") for line in r.stdout.splitlines() if (m := LISTED.match(line))}
    assert tests, f"the plugin listed no conformance test:\n{r.stdout[-3000:]}"
    return tests


def test_every_conformance_test_has_a_break_case(collected):
    from tests.breaks.test_breaks import CASES

    cases = {c.test for c in CASES}
    missing = sorted(t for t in collected if t not in cases)
    assert not missing, (f"conformance tests without a deliberate break in tests/breaks/cases_<resource>.py (CASES): "
                         f"{', '.join(missing)}; add a Case that makes each fail")
    stale = sorted(c for c in cases if c not in collected)
    assert not stale, f"break cases naming no conformance test: {', '.join(stale)}"


def test_every_feature_has_a_test(collected):
    tested = {f for names in collected.values() for f in names}
    untested = [f for f in features.NAMES if f not in tested]
    assert not untested, (f"features no conformance test exercises (a profile could claim them and nothing would "
                          f"run): {', '.join(untested)}; add a test or remove the feature from "
                          "src/rayconformance/features/")


def test_every_conformance_test_states_its_behavior():
    undocumented = [f"{path.relative_to(ROOT)}::{node.name}"
                    for path in sorted((ROOT / "conformance").rglob("test_*.py"))
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and not ast.get_docstring(node)]
    assert not undocumented, f"conformance tests without a docstring (their description in the report): {undocumented}"


def test_every_conformance_test_declares_existing_samples():
    """Each test declares what it applies (@pytest.mark.samples), and each declared sample exists."""
    undeclared, missing = [], []
    for path in sorted((ROOT / "conformance").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            marks = [d for d in node.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func).endswith(
                "mark.samples")]
            if not marks:
                undeclared.append(f"{path.relative_to(ROOT)}::{node.name}")
            missing += [f"{node.name}: samples/{a.value}.yaml" for m in marks for a in m.args
                        if isinstance(a, ast.Constant) and not (ROOT / "samples" / f"{a.value}.yaml").is_file()]
    assert not undeclared, f"conformance tests without @pytest.mark.samples(...): {undeclared}"
    assert not missing, f"declared samples that do not exist: {missing}"


def test_no_test_names_an_image_of_its_own():
    """A test's images come from the samples it declares, which the run makes ready before the first test; an image
    written into a test body is never loaded on kind (seen: a busybox init container left a new head pulling)."""
    named = []
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                named += [f"{path.relative_to(ROOT)}:{v.lineno} {v.value}" for k, v in zip(node.keys, node.values)
                          if isinstance(k, ast.Constant) and k.value == "image" and isinstance(v, ast.Constant)]
    assert not named, f"images named in test code rather than taken from a declared sample: {named}"


def test_tests_work_through_the_context():
    """No conformance module passes the client and namespace around by hand: tests take `ctx`."""
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "conformance").rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if "(k8s, namespace" in line]
    assert not found, f"argument lists instead of the test context: {found}"
