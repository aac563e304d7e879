"""The house rules for the code itself, read from the sources (nothing is imported): the modules of fixtures/ and
clusters/ import each other without cycles and only downwards through the layers below, every module says in a
docstring what it holds, and no Python file outside tests/ grows past MAX_LINES."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400

# Layers, lowest first: a module may import its own layer and those below, never one above.
FIXTURES, CLUSTERS = "rayconformance.fixtures", "rayconformance.clusters"
OUTSIDE_THE_PRODUCT = ("conformance", "tests", "bench")  # top-level folders the installed package never imports
MUST_NOT_IMPORT = {  # module (or package, with every module in it) -> what it must not import, and why
    CLUSTERS: ([FIXTURES], "cluster definitions and test beds sit below the pytest plugin"),
    f"{FIXTURES}.waiting": ([f"{FIXTURES}.expect"], "waiting sits below the expectations that wait"),
    f"{FIXTURES}.objects": ([f"{FIXTURES}.operator", f"{FIXTURES}.expect"],
                            "the object engine sits below the operator install and the expectations"),
    f"{FIXTURES}.errors": ([FIXTURES, CLUSTERS], "a low-level helper imports nothing of the project"),
    f"{FIXTURES}.describe": ([FIXTURES, CLUSTERS], "a low-level helper imports nothing of the project"),
}


def _package_dirs() -> dict[str, Path]:
    """Installed package name -> folder, for fixtures/ and clusters/ (pyproject.toml, package-dir)."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in dirs.items() if name in (FIXTURES, CLUSTERS)}


def _modules() -> dict[str, Path]:
    """Every module of fixtures/ and clusters/ by its installed name (a package by its own name)."""
    out = {}
    for package, folder in _package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _within(name: str, scope: str) -> bool:
    return name == scope or name.startswith(scope + ".")


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported name, line) for every import in the file, also those inside functions; relative ones resolved,
    `from package import submodule` naming the submodule."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for a in node.names:
                found.append((f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base, node.lineno))
    return found


def _internal(name: str) -> str | None:
    """The module of fixtures/ or clusters/ an imported name lives in (the longest module prefix), or None."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in MODULES:
            return ".".join(parts[:n])
    return None


GRAPH = {m: [(t, line) for name, line in _imports(m, p) if (t := _internal(name)) and t != m]
         for m, p in MODULES.items()}


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def test_the_modules_and_their_imports_are_found():
    assert f"{FIXTURES}.plugin" in MODULES and f"{CLUSTERS}.local.testbed" in MODULES, sorted(MODULES)
    assert f"{FIXTURES}.providers" in {t for t, _ in GRAPH[f"{FIXTURES}.environment"]}, "a top-level import"
    assert f"{FIXTURES}.operator.installer" in {t for t, _ in GRAPH[f"{FIXTURES}.environment"]}, \
        "an import inside a function, of a submodule (`from .operator import installer`)"
    assert f"{CLUSTERS}.toolcache" in {t for t, _ in GRAPH[f"{CLUSTERS}.local.storage"]}, "`from .. import toolcache`"


def test_no_import_cycle():
    cycles, state = [], {}  # state: 1 on the current path, 2 done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t, _ in GRAPH[m]:
            if state.get(t) == 1:
                cycle = path[path.index(t):] + [t]
                cycles.append(" -> ".join(c.removeprefix("rayconformance.") for c in cycle))
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(MODULES):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles (also imports inside functions count):\n  " + "\n  ".join(cycles)


def test_no_upward_import():
    offenders = []
    for m, path in sorted(MODULES.items()):
        for name, line in _imports(m, path):
            if name.split(".")[0] in OUTSIDE_THE_PRODUCT:
                offenders.append(f"{_where(m, line)} imports {name}: the package never imports "
                                 f"{'/'.join(OUTSIDE_THE_PRODUCT)}")
        for scope, (forbidden, why) in MUST_NOT_IMPORT.items():
            if not _within(m, scope):
                continue
            offenders += [f"{_where(m, line)} imports {t}: {why}" for t, line in GRAPH[m]
                          if any(_within(t, f) for f in forbidden) and not _within(t, scope)]
    assert not offenders, "imports against the layers:\n  " + "\n  ".join(offenders)


def _top_level_names(path: Path) -> set[str]:
    """What a module defines or imports at its top level (inside top-level if/try blocks too)."""
    names: set[str] = set()
    body = list(ast.parse(path.read_text()).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            body += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []) + \
                [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


def test_every_name_imported_from_the_project_exists():
    """A name moved to another module leaves no importer behind, also one whose code no unit test runs: the
    modules of fixtures/ and clusters/, and whatever imports them absolutely (tests, benches, conformance tests)."""
    others = sorted(p for top in OUTSIDE_THE_PRODUCT for p in (ROOT / top).rglob("*.py"))
    importers = sorted(MODULES.items()) + [(None, p) for p in others]
    missing = []
    for m, path in importers:
        package = m if m is None or path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or (node.level and m is None):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if base not in MODULES:
                continue
            defined = _top_level_names(MODULES[base]) | {n.rpartition(".")[2] for n in MODULES
                                                         if n.rpartition(".")[0] == base}
            missing += [f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name} from {base}, which has no such name"
                        for a in node.names if a.name != "*" and a.name not in defined]
    assert not missing, "\n  ".join(["imports of names that are not there:", *missing])


def _python_files_outside_tests() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
                  and p.relative_to(ROOT).parts[0] not in ("tests", "reports", "build"))


def test_no_python_file_outside_tests_is_too_long():
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _python_files_outside_tests()
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, f"split these by job into modules of at most {MAX_LINES} lines:\n  " + "\n  ".join(long)


@pytest.mark.parametrize("top", ["fixtures", "clusters", "bench", "src"])
def test_every_module_says_what_it_holds(top):
    missing = [str(p.relative_to(ROOT)) for p in sorted((ROOT / top).rglob("*.py"))
               if not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()]
    assert not missing, "give these a module docstring (its first line: what the module holds):\n  " + \
        "\n  ".join(missing)
