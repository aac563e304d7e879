"""What the suite's declarations would assert of the ray.io CRDs if every test ran: a run's field coverage read
from the sources, without a cluster (the `covers` markers, `ctx.covers` and `ctx.covers_copied` calls of
conformance/, the `@record.covers`/`record.declare`/`record.declare_copied` of the must-holds,
conformance/field-assertions.yaml), against KubeRay v1.7.0's CRDs kept for the unit tests. A real run counts only
the tests that ran; this is the ceiling it can reach.

A declaration's arguments are evaluated from the source where they are plain data: literals, f-strings and
subscripts of names bound to literals at module level, imported from the package, assigned earlier in the test, or
given by the test's `parametrize` (each parametrization on its own). What cannot be evaluated that way is not
counted.

    .venv/bin/python bench/fieldcov_static.py                    # this checkout
    .venv/bin/python bench/fieldcov_static.py --root /tmp/older   # another checkout (a worktree of an older commit)
    .venv/bin/python bench/fieldcov_static.py --uncovered RayJob  # and the fields of a CRD no declaration asserts
"""
from __future__ import annotations

import argparse
import ast
import importlib
import itertools
from pathlib import Path

import yaml

from rayconformance.fieldcov import assertions_file, coverage
from rayconformance.fieldcov.copies import Copied, check_all
from rayconformance.fieldcov.paths import PathError, parse

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "tests" / "unit" / "data" / "fieldcov"
DECLARING = ("covers", "declare")
COPYING = ("declare_copied", "covers_copied")
DATA = (str, int, float, bool, tuple, list, dict, set, frozenset, type(None))


class Unknown(Exception):
    """A value the sources do not give as plain data."""


def evaluate(node: ast.AST, env: dict):
    """The value of an expression made of literals and names `env` binds; Unknown otherwise."""
    match node:
        case ast.Constant(value=v):
            return v
        case ast.Name(id=name):
            if name in env:
                return env[name]
            raise Unknown(name)
        case ast.JoinedStr(values=parts):
            return "".join(str(evaluate(p.value, env)) if isinstance(p, ast.FormattedValue) else p.value
                           for p in parts)
        case ast.Subscript(value=value, slice=ast.Slice(lower=lo, upper=hi, step=st)):
            bounds = [None if b is None else evaluate(b, env) for b in (lo, hi, st)]
            return evaluate(value, env)[slice(*bounds)]
        case ast.Subscript(value=value, slice=key):
            try:
                return evaluate(value, env)[evaluate(key, env)]
            except (KeyError, IndexError, TypeError):
                raise Unknown(ast.unparse(node)) from None
        case ast.Tuple(elts=items) | ast.List(elts=items) | ast.Set(elts=items):
            values = [evaluate(e, env) for e in items if not isinstance(e, ast.Starred)]
            if len(values) < len(items):
                raise Unknown(ast.unparse(node))
            return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](values)
        case ast.Dict(keys=keys, values=values) if None not in keys:
            return {evaluate(k, env): evaluate(v, env) for k, v in zip(keys, values)}
        case ast.BinOp(left=left, op=ast.Add(), right=right):
            return evaluate(left, env) + evaluate(right, env)
        case ast.Call(func=ast.Attribute(attr="param"), args=args):  # pytest.param(...) in a parametrize list
            values = tuple(evaluate(a, env) for a in args)
            return values[0] if len(values) == 1 else values
    raise Unknown(ast.unparse(node))


def bind(targets: list[ast.expr], value: ast.expr, env: dict) -> None:
    """Bind what an assignment binds, where its value is plain data (a name it cannot evaluate is forgotten)."""
    for target in targets:
        pairs = list(zip(target.elts, value.elts)) if isinstance(target, ast.Tuple) and \
            isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts) else [(target, value)]
        for t, v in pairs:
            if isinstance(t, ast.Name):
                try:
                    env[t.id] = evaluate(v, env)
                except Unknown:
                    env.pop(t.id, None)


def module_env(tree: ast.Module) -> dict:
    """The module's names bound to plain data: its literal assignments and what it imports from the package."""
    env: dict = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            bind(stmt.targets, stmt.value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            bind([stmt.target], stmt.value, env)
        elif isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith("rayconformance") and not stmt.level:
            try:
                module = importlib.import_module(stmt.module)
            except Exception:  # noqa: BLE001 - a module that does not import here gives no names
                continue
            for alias in stmt.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, DATA):
                    env[alias.asname or alias.name] = value
    return env


def _name(call: ast.Call) -> str | None:
    return getattr(call.func, "attr", getattr(call.func, "id", None))


def _unwrapped(value):
    """A parametrization's value: a `pytest.param` (imported from the package as data) gives its values."""
    if type(value).__name__ == "ParameterSet":
        return value.values[0] if len(value.values) == 1 else value.values
    return value


def bindings(fn: ast.FunctionDef | ast.AsyncFunctionDef, env: dict) -> list[dict]:
    """One binding of the test's parameters per parametrization its `parametrize` decorators give ([{}] when
    they cannot be evaluated)."""
    axes = []
    for deco in fn.decorator_list:
        if not (isinstance(deco, ast.Call) and _name(deco) == "parametrize" and len(deco.args) >= 2):
            continue
        try:
            names, values = evaluate(deco.args[0], env), list(evaluate(deco.args[1], env))
        except (Unknown, TypeError):
            return [{}]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        values = [_unwrapped(v) for v in values]
        axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in values])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*axes)] or [{}]


def declarations(scope: ast.AST, env: dict, found: set[str], copied: set[Copied]) -> None:
    """Add the declarations in `scope` (a function, or a module's top level), its assignments evaluated in order."""
    env = dict(env)
    nodes = sorted((n for n in ast.walk(scope) if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        if isinstance(node, ast.Assign) and node is not scope:
            bind(node.targets, node.value, env)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            _each(node, env, found, copied)
        elif isinstance(node, ast.Call) and _name(node) in DECLARING:
            for arg in node.args:
                try:
                    value = evaluate(arg, env)
                except Unknown:
                    continue
                found |= {v for v in (value if isinstance(value, (list, tuple)) else [value])
                          if isinstance(v, str) and ":" in v}
        elif isinstance(node, ast.Call) and _name(node) in COPYING and len(node.args) == 3:
            try:
                copied.update(check_all(*(evaluate(a, env) for a in node.args)))
            except (Unknown, PathError, TypeError):
                continue


def _each(comp: ast.ListComp | ast.GeneratorExp, env: dict, found: set[str], copied: set[Copied]) -> None:
    """The declarations in a comprehension's element, once per item of what it iterates (when that is data)."""
    gen = comp.generators[0]
    try:
        items = list(evaluate(gen.iter, env))
    except (Unknown, TypeError):
        return
    for item in items:
        inner = dict(env)
        if isinstance(gen.target, ast.Name):
            inner[gen.target.id] = item
        declarations(comp.elt, inner, found, copied)


def declared_in_sources(root: Path) -> tuple[set[str], set[Copied]]:
    """Every field a source under conformance/ or src/rayconformance/testing/ declares asserted, and every copy it
    declares."""
    found, copied = set(), set()
    for folder in ("conformance", "src/rayconformance/testing"):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            env = module_env(tree)
            functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            outer = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                 ast.ClassDef))]
            for stmt in outer:
                declarations(stmt, env, found, copied)
            for fn in functions:
                for binding in bindings(fn, env):
                    declarations(fn, {**env, **binding}, found, copied)
    return found, copied


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
    parser.add_argument("--uncovered", metavar="KIND", help="also list the fields of KIND no declaration asserts, "
                                                              "directly or through a copy")
    args = parser.parse_args()
    crds = [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("ray.io_*.yaml"))]
    in_sources, copied = declared_in_sources(args.root)
    declared = valid(in_sources | declared_in_file(args.root))
    section = coverage.section(crds, set(), declared, copied=copied)
    print(f"declared fields: {len(declared)}, copied paths: {len(copied)} (checkout {args.root})")
    for row in section["crds"]:
        counted = row["fields"] - row["excluded"]
        print(f"{row['kind']:<11} asserted {row['asserted']:>4} of {counted:>4} ({row['assertedPercent']}%), "
              f"through a copy {row['assertedThroughCopy']:>4} ({row['assertedThroughCopyPercent']}%), "
              f"{row['excluded']} excluded")
        if args.uncovered == row["kind"]:
            through = set(row["throughCopy"])
            print("  " + "\n  ".join(f for f in row["uncovered"] if f not in through))
    for name in section["unknownDeclarations"]:
        print(f"  declared, but no v1.7.0 CRD has it: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
