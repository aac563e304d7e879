"""The house rules for the code itself, read from the sources (nothing is imported): the modules of the package
(src/rayconformance, and fixtures/ and clusters/, which install into it) import each other without cycles and only
downwards through `LAYERS`, every module says in a docstring what it holds, every package of the framework names
its modules in its own, and no Python file outside tests/ grows past MAX_LINES."""
from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400

PKG = "rayconformance"
FIXTURES, TESTING, CLUSTERS = f"{PKG}.fixtures", f"{PKG}.testing", f"{PKG}.clusters"
OUTSIDE_THE_PRODUCT = ("conformance", "tests", "bench")  # top-level folders the installed package never imports
# The layers of the package, lowest first: a module may import the modules of its own layer and of those below it,
# never one above. A module is in the layer of the scope (a package, or a module) that names it most closely; the
# root package names only itself. Every module must be in a layer: a new package takes its place here.
LAYERS = (
    ("cluster definitions and test beds (clusters/)", (CLUSTERS,)),
    ("the helpers any layer may use", (PKG, f"{PKG}.errors", f"{PKG}.describe", f"{PKG}.features", f"{PKG}.schemas")),
    ("waiting, which everything that waits goes through (testing/waiting.py)", (f"{TESTING}.waiting",)),
    ("Kubernetes access", (f"{PKG}.kube",)),
    ("field coverage, as measured", (f"{PKG}.fieldcov",)),
    ("the conformance report", (f"{PKG}.report",)),
    ("cluster providers", (f"{PKG}.providers",)),
    ("the operator under test", (f"{PKG}.operator",)),
    ("what the tests import: ctx, handles, must-holds, watches, traffic (testing/)", (TESTING,)),
    ("a conformance run: options to finish, bring-up", (f"{PKG}.run",)),
    ("the pytest fixtures (fixtures/)", (FIXTURES,)),
    ("the pytest plugin", (f"{PKG}.plugin",)),
    # the commands: python -m rayconformance (and its `results`, where the suite has it), the version matrix
    ("the commands", (f"{PKG}.__main__", f"{PKG}.results", f"{PKG}.matrix")),
)
IMPORT_NOTHING = {  # module -> why it imports nothing of the project (its own package aside)
    **{m: "a low-level helper that any module may use imports nothing of the project"
       for m in (PKG, f"{PKG}.errors", f"{PKG}.describe", f"{PKG}.features", f"{PKG}.schemas")},
    CLUSTERS: "cluster definitions and test beds sit below everything else",
}
TESTING_DIR = ROOT / "src" / PKG / "testing"
NAMED_MODULES = ("src/rayconformance", "fixtures")  # packages under these name each of their modules in a docstring


def _package_dirs() -> dict[str, Path]:
    """Installed package name -> folder (pyproject.toml, package-dir)."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in dirs.items()}


def _modules() -> dict[str, Path]:
    """Every module of the package by its installed name (a package by its own name)."""
    out = {}
    for package, folder in _package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if any(p.startswith(".") or p == "__pycache__" for p in parts):
                continue
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
    """The module of the package an imported name lives in (the longest module prefix), or None."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in MODULES:
            return ".".join(parts[:n])
    return None


GRAPH = {m: [(t, line) for name, line in _imports(m, p) if (t := _internal(name)) and t != m]
         for m, p in MODULES.items()}


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def _layer(module: str) -> int | None:
    """The index in LAYERS of the scope that names `module` most closely, or None."""
    best = None
    for i, (_, scopes) in enumerate(LAYERS):
        for scope in scopes:
            if (module == scope or (scope != PKG and _within(module, scope))) and \
                    (best is None or len(scope) > len(best[1])):
                best = (i, scope)
    return best[0] if best else None


def test_the_modules_and_their_imports_are_found():
    assert f"{PKG}.plugin.wiring" in MODULES and f"{CLUSTERS}.local.testbed" in MODULES, sorted(MODULES)
    assert f"{TESTING}.waiting" in MODULES and f"{PKG}.errors" in MODULES, sorted(MODULES)
    assert f"{PKG}.providers" in {t for t, _ in GRAPH[f"{PKG}.run.environment"]}, "a top-level import"
    assert f"{PKG}.operator.installer" in {t for t, _ in GRAPH[f"{PKG}.run.environment"]}, \
        "an import inside a function, of a submodule (`from rayconformance.operator import installer`)"
    assert f"{PKG}.run.state" in {t for t, _ in GRAPH[f"{PKG}.run.bringup"]}, "a relative one (`from .state import`)"
    assert f"{CLUSTERS}.toolcache" in {t for t, _ in GRAPH[f"{CLUSTERS}.local.storage"]}, "`from .. import toolcache`"
    assert _layer(f"{TESTING}.waiting") < _layer(f"{PKG}.kube.objects") < _layer(f"{TESTING}.context") \
        < _layer(f"{PKG}.run.options") < _layer(f"{FIXTURES}.pertest"), "a module is in its closest scope's layer"
    assert _layer(f"{PKG}.report.results") != _layer(PKG), "the root package names only itself"


def test_every_module_is_in_a_layer():
    missing = sorted(m for m in MODULES if _layer(m) is None)
    assert not missing, "give these a place in LAYERS (tests/unit/test_house.py):\n  " + "\n  ".join(missing)


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
        here = _layer(m)
        if here is None:
            continue
        for t, line in GRAPH[m]:
            there = _layer(t)
            if there is not None and there > here:
                offenders.append(f"{_where(m, line)} imports {t}: {LAYERS[here][0]} sits below {LAYERS[there][0]}")
        for scope, why in IMPORT_NOTHING.items():
            if m == scope or (scope != PKG and _within(m, scope)):
                offenders += [f"{_where(m, line)} imports {t}: {why}" for t, line in GRAPH[m]
                              if not (scope != PKG and _within(t, scope))]
    assert not offenders, "imports against the layers:\n  " + "\n  ".join(offenders)


def test_no_import_cycle_between_layers():
    """Each layer's scopes, taken as one node each: the layers order them, so no two import each other."""
    edges = {(a, b) for m in MODULES for t, _ in GRAPH[m] if None not in (a := _layer(m), b := _layer(t))}
    both_ways = sorted(f"{LAYERS[a][0]} <-> {LAYERS[b][0]}" for a, b in edges if a < b and (b, a) in edges)
    assert not both_ways, "layers importing each other:\n  " + "\n  ".join(both_ways)


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


MODULE_ATTRIBUTES = {"__doc__", "__file__", "__name__", "__path__"}  # every module has them


def test_every_name_imported_from_the_project_exists():
    """A name moved to another module leaves no importer behind, also one whose code no unit test runs: the
    modules of the package, and whatever imports them absolutely (tests, benches, conformance tests)."""
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
                                                         if n.rpartition(".")[0] == base} | MODULE_ATTRIBUTES
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


def _named_packages() -> list[Path]:
    return sorted(init.parent for top in NAMED_MODULES for init in (ROOT / top).rglob("__init__.py")
                  if init.parent != ROOT / "src" / PKG and "__pycache__" not in init.parts
                  and TESTING_DIR not in init.parent.parents)  # expect/ and handles/ say it per module


@pytest.mark.parametrize("package", _named_packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_names_its_modules(package):
    """A newcomer finds a job by its folder, and what each of its modules does in the folder's __init__.py."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    modules = [p.name for p in sorted(package.glob("*.py")) if p.stem not in ("__init__", "__main__")]
    modules += [f"{p.name}/" for p in sorted(package.iterdir()) if (p / "__init__.py").is_file()]
    unnamed = [m for m in modules if not re.search(rf"(?<![\w/]){re.escape(m)}(?![\w.])", doc)]
    assert not unnamed, f"say in {package.relative_to(ROOT)}/__init__.py what these hold: {', '.join(unnamed)}"
