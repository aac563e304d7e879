"""The code of one conformance test as its break case's digest sums it up: the test function (decorators and
parametrization included) and every module-level definition it names, transitively, read through the AST, so
comments, layout, the module's docstring, its import paths and its other tests leave it unchanged.

Imported names count by name only (`from x import y as z` is `z = y`): what they are lives in the fixtures and the
framework, which a case's digest never covered (bench/breaks_ledger.py: the next full pass catches a change there).
A module-level `pytestmark` always counts: it marks every test of the module; so do the fixtures a test takes by name
only (`usefixtures("...")`) and the module's autouse fixtures."""
from __future__ import annotations

import ast


def _names(node: ast.AST) -> set[str]:
    """The names a node reads, and the parameters of a function (a fixture of the module is one of them)."""
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    for fn in (n for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
        out |= {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    return out


def _definitions(tree: ast.Module) -> dict[str, list[tuple[str, set[str]]]]:
    """Module-level name -> (source, names it reads) of each statement that binds it, in order (an import by name
    only, reading nothing)."""
    out: dict[str, list[tuple[str, set[str]]]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                out.setdefault(bound, []).append((f"{bound} = <imported {alias.name}>", set()))
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {stmt.name}
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        else:  # module-level control flow (if/try/for): whatever it binds depends on all of it
            bound = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in bound:
            out.setdefault(name, []).append((ast.unparse(stmt), _names(stmt)))
    return out


def test_code(test: str, text: str) -> str | None:
    """The code of the test `test` (a break case's test name: `name` or `name[param]`, the function `test_<name>`)
    in the module source `text`, as text; None when the module defines no such function."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    function = f"test_{test.split('[')[0]}"
    node = next((s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and s.name == function), None)
    if node is None:
        return None
    definitions = _definitions(tree)
    # fixtures it takes by name only: those of usefixtures("...") on it, and the module's autouse ones
    by_name = {a.value for d in node.decorator_list for a in getattr(d, "args", [])
               if "usefixtures" in ast.unparse(d) and isinstance(a, ast.Constant) and isinstance(a.value, str)}
    autouse = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
               and any("autouse" in ast.unparse(d) for d in s.decorator_list)}
    seen, todo, parts = {function}, sorted(_names(node) | by_name | autouse | {"pytestmark"}), [ast.unparse(node)]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        for source, reads in definitions[name]:
            parts.append(source)
            todo.extend(sorted(reads - seen))
    return "\n\n".join(parts)
