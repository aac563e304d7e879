"""One import package: the folders fixtures/ and clusters/ install as rayconformance.fixtures and
rayconformance.clusters (src/rayconformance as rayconformance), every package folder is listed in pyproject.toml, and no code imports a top-level
`fixtures` or `clusters` (names other distributions own)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP_LEVEL_IMPORT = re.compile(r"^\s*(from|import)\s+(fixtures|clusters)\b|-m (fixtures|clusters)\.", re.M)


def test_every_package_folder_is_installed():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join([package, *init.parent.relative_to(ROOT / folder).parts])
             for package, folder in setuptools["package-dir"].items() for init in (ROOT / folder).rglob("__init__.py")}
    assert sorted(found) == sorted(setuptools["packages"]), \
        f"pyproject.toml [tool.setuptools] packages must list exactly {sorted(found)}"


def test_nothing_imports_a_top_level_fixtures_or_clusters():
    files = [ROOT / "Makefile", *[p for top in ("fixtures", "clusters", "conformance", "tests", "bench", "src")
                                  for pattern in ("*.py", "*.sh") for p in (ROOT / top).rglob(pattern)]]
    offenders = [str(p.relative_to(ROOT)) for p in files if TOP_LEVEL_IMPORT.search(p.read_text())]
    assert not offenders, f"import rayconformance.fixtures / rayconformance.clusters instead, in: {offenders}"
