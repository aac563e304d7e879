"""The Ray programs of samples/programs/ the tests run as Ray jobs: valid, lint-clean Python whose parameter lines
the tests set, and the entrypoint that hands a program's text to the head's shell unchanged."""
from __future__ import annotations

import ast
import io
import re
import shlex
import subprocess

import pytest

from rayconformance.testing.programs import PROGRAMS, ProgramError, program, python_c

FILES = sorted(PROGRAMS.glob("*.py"))
PARAMETER = re.compile(r"^(\w+)[ \t]*=.*#[ \t]*parameter[ \t]*$", re.M)


def test_there_are_programs():
    assert len(FILES) >= 20, f"expected the Ray programs in {PROGRAMS}; found {[p.name for p in FILES]}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_program_is_lint_clean_python_with_literal_parameters(path):
    text = path.read_text()
    tree = ast.parse(text, str(path))
    assert ast.get_docstring(tree), f"{path.name}: say in a docstring what the program does and prints"
    for name in PARAMETER.findall(text):
        [line] = [n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name]
        ast.literal_eval(line.value)  # a default the test replaces by a value's repr
    pyflakes = pytest.importorskip("pyflakes.api")
    from pyflakes.reporter import Reporter

    out = io.StringIO()
    assert pyflakes.check(text, str(path), Reporter(out, out)) == 0, out.getvalue()


def test_parameters_are_set_by_value():
    text = program("tpu_probe", ips=["10.0.0.1", "10.0.0.2"], chips=4)
    assert "ips = ['10.0.0.1', '10.0.0.2']\n" in text and "chips = 4\n" in text and "# parameter" not in text
    assert "value = b'stored'\n" in program("gcs_kv_put", value=b"stored")
    assert "name = 'ray::ProxyActor'\n" in program("signal_processes", name="ray::ProxyActor")


def test_an_unknown_program_or_parameter_is_one_line():
    with pytest.raises(ProgramError, match=r"^Ray program .*no-such\.py not found: name one of samples/programs"):
        program("no-such")
    with pytest.raises(ProgramError, match=r"^Ray program gpu_demand\.py has 0 lines `wiat = \.\.\.  # parameter`"):
        program("gpu_demand", wiat=3)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_entrypoint_hands_the_text_to_python_unchanged(path):
    text = program(path.stem)
    assert shlex.split(python_c(text)) == ["python", "-c", text]
    echoed = subprocess.run(["sh", "-c", python_c(text).replace("python -c ", "printf %s ", 1)],
                            capture_output=True, text=True, check=True).stdout
    assert echoed == text
