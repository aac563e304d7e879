"""conformance/field-assertions.yaml: the fields each conformance test's body asserts, kept in one file beside the
tests so that declaring them leaves the test modules (and the break ledger's digests of them) as they are.

    test_manual_scale_up_and_down:                     # every parametrization of the test
      - RayCluster:spec.workerGroupSpecs[].replicas
    test_invalid_rayjob_fails_validation_and_creates_nothing[runtime-env-not-yaml]:   # that one only
      - RayJob:spec.runtimeEnvYAML

An entry counts as a `covers` marker on the test it names: only once the test's call ran. The file is read from
the conformance directory of the run's rootdir (where the run's tests are); a run without it lists nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from rayconformance.errors import one_line

from .paths import PathError, parse

FILENAME = "field-assertions.yaml"
CONFORMANCE_DIR = "conformance"  # as run/state.py names it (it imports this package: no import back)
WHERE = f"{CONFORMANCE_DIR}/{FILENAME}"
_ENTRY = re.compile(r"(test_\w+)(?:\[.+\])?")
_DEFINED = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)\s*\(", re.M)


class AssertionsFileError(ValueError):
    """A field-assertions file that cannot be used (one line, naming the entry, for the user)."""


class _UniqueKeys(yaml.SafeLoader):
    """YAML whose mappings may not repeat a key (the second entry of a test would silently replace the first)."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        if (twice := next((k for k in keys if keys.count(k) > 1), None)) is not None:
            raise AssertionsFileError(f"{WHERE}: entry {twice!r} is there twice; merge its fields into one entry")
        return super().construct_mapping(node, deep)


def path_in(rootpath: Path) -> Path:
    return rootpath / CONFORMANCE_DIR / FILENAME


def defined_tests(conformance_dir: Path) -> set[str]:
    """The names of the test functions the conformance modules define (`def test_<name>(`)."""
    return {name for p in conformance_dir.rglob("test_*.py") for name in _DEFINED.findall(p.read_text())}


@dataclass(frozen=True)
class Listed:
    """The file's entries: `test_name` or `test_name[param id]` -> the `Kind:path` fields its body asserts."""
    entries: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def fields(self, item: pytest.Item) -> list[str]:
        """The fields listed for a collected test: its function's entry and the entry of its parametrization."""
        base = getattr(item, "originalname", item.name)
        return [*self.entries.get(base, ()), *(self.entries.get(item.name, ()) if item.name != base else ())]

    def parameter_problems(self, items: list[pytest.Item]) -> list[str]:
        """A line for each entry whose parameter id is none of those its function has among `items` (the items of
        one collected module or class)."""
        ids: dict[str, set[str]] = {}
        for i in items:
            base = getattr(i, "originalname", i.name)
            ids.setdefault(base, set()).add(i.name[len(base):])  # "[<id>]", or "" when not parametrized
        problems = []
        for entry in self.entries:
            base, _, rest = entry.partition("[")
            if rest and base in ids and f"[{rest}" not in ids[base]:
                known = ", ".join(sorted(i[1:-1] for i in ids[base] if i)) or "none (it is not parametrized)"
                problems.append(f"{WHERE}: entry {entry!r}: {base} has no parametrization [{rest[:-1]}]; its ids: "
                                f"{known}")
        return problems


def parse_entries(data, defined: set[str]) -> Listed:
    """The entries of the file's parsed YAML; an AssertionsFileError naming the first entry that is wrong."""
    if data is None:
        return Listed()
    if not isinstance(data, dict):
        raise AssertionsFileError(f"{WHERE}: must map test names to lists of fields (e.g. "
                                  "'test_suspend_and_resume: [RayCluster:spec.suspend]')")
    entries = {}
    for name, fields in data.items():
        m = _ENTRY.fullmatch(name) if isinstance(name, str) else None
        if not m:
            raise AssertionsFileError(f"{WHERE}: entry {name!r} is not a test name (test_<name>, or "
                                      "test_<name>[<parameter id>] for one parametrization)")
        if m.group(1) not in defined:
            raise AssertionsFileError(f"{WHERE}: entry {name!r}: no conformance test is named {m.group(1)} (no "
                                      f"`def {m.group(1)}(` under conformance/); correct the name or drop the entry")
        if not isinstance(fields, list) or not fields:
            raise AssertionsFileError(f"{WHERE}: entry {name!r} must list the fields its test asserts, as "
                                      "'Kind:path' strings")
        for f in fields:
            try:
                parse(f)
            except PathError as e:
                raise AssertionsFileError(f"{WHERE}: entry {name!r}: {e}") from None
        entries[name] = tuple(fields)
    return Listed(entries)


def load(rootpath: Path) -> Listed:
    """The listed fields of the conformance tests under `rootpath` (none without a file)."""
    path = path_in(rootpath)
    if not path.is_file():
        return Listed()
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeys)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise AssertionsFileError(f"{WHERE}: not readable YAML ({one_line(e)[:200]})") from None
    return parse_entries(data, defined_tests(path.parent))
