"""Cluster definitions (clusters/*.yaml): the part every provider shares, and the registry of provider sections.

A definition is read and checked once, into a `ClusterDefinition`: its name, its provider, where it was read
from, and the provider's own section as a typed value. The common keys are parsed here; every other top-level
key belongs to the provider's section, which lives in `rayconformance.clusters.<provider>.section` and
registers itself with `@register("<provider>")` (a provider without such a module takes no section keys).
A definition travels as a value: `to_dict()` and `ClusterDefinition.from_dict()` carry it between processes
(e.g. in a run's environment.json) without reading the file again.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

import yaml

from . import codec

CLUSTERS_DIR = Path(__file__).resolve().parent
SCHEMA = CLUSTERS_DIR / "definition.schema.json"  # what load() checks last (`python -m rayconformance schema cluster`)
COMMON_KEYS = ("apiVersion", "kind", "name", "provider")


class DefinitionError(ValueError):
    """A cluster definition is missing or malformed; the message is one line saying what and how to fix it."""


class SectionError(ValueError):
    """Raised by a section's parser: `key` is the definition key at fault (e.g. `section.list[1].name`)."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


class Section(Protocol):
    """What a provider's section offers the common loader (a frozen dataclass, so it travels as a value)."""
    KEYS: ClassVar[tuple[str, ...]]  # the top-level keys of a definition that belong to this section

    @classmethod
    def parse(cls, doc: dict, name: str, path: Path) -> "Section":
        """The section from the whole document; raises SectionError (or KeyError/TypeError/ValueError)."""

    @property
    def has_gpus(self) -> bool: ...


SECTIONS: dict[str, type] = {}  # provider -> its section class, filled by register()


def register(provider: str):
    """Class decorator: `cls` parses the section of `provider: <provider>` definitions."""
    def add(cls: type) -> type:
        SECTIONS[provider] = cls
        return cls
    return add


def section_class(provider: str) -> type | None:
    """The section class of `provider`, importing its module on first need; None if it takes none."""
    if provider not in SECTIONS:
        module = f"{__package__}.{provider}.section"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name not in (module, f"{__package__}.{provider}"):
                raise
    return SECTIONS.get(provider)


@dataclass(frozen=True)
class ClusterDefinition:
    name: str
    provider: str
    path: Path  # where it was read from, for messages
    section: Section | None = None  # the provider's section (its registered class), None for a provider that takes none

    @property
    def has_gpus(self) -> bool:
        """Whether the cluster's nodes offer GPUs (what the suite reads of a definition)."""
        return bool(self.section is not None and self.section.has_gpus)

    def to_dict(self) -> dict:
        return {"name": self.name, "provider": self.provider, "path": str(self.path),
                "section": codec.encode(self.section)}

    @classmethod
    def from_dict(cls, data: dict) -> "ClusterDefinition":
        section = section_class(data["provider"])
        return cls(name=data["name"], provider=data["provider"], path=Path(data["path"]),
                   section=codec.decode(section, data["section"]) if section and data["section"] is not None else None)


def resolve_named(name_or_path: str, directory: Path) -> Path:
    """A name (`local-cpu`, looked up as <directory>/<name>.yaml) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return directory / f"{name_or_path}.yaml"


def load(name_or_path: str) -> ClusterDefinition:
    """Read, check and parse one definition; every problem is a one-line DefinitionError naming the file."""
    path = resolve_named(name_or_path, CLUSTERS_DIR)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml")))
        raise DefinitionError(f"cluster definition '{name_or_path}' not found ({path}); known: {known}")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise DefinitionError(f"cluster definition {path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ClusterDefinition":
        raise DefinitionError(f"cluster definition {path}: expected 'kind: ClusterDefinition' at the top level")
    if not doc.get("provider"):
        raise DefinitionError(f"cluster definition {path}: missing 'provider' (the --provider it is for)")
    provider = str(doc["provider"])
    name = str(doc.get("name") or path.stem)
    cls = section_class(provider)
    allowed = COMMON_KEYS + (cls.KEYS if cls else ())
    unknown = [k for k in doc if k not in allowed]
    if unknown:
        raise DefinitionError(f"cluster definition {path}: unknown key '{unknown[0]}' for provider {provider}; "
                              f"allowed keys: {', '.join(allowed)}")
    section = None
    if cls is not None:
        try:
            section = cls.parse(doc, name, path)
        except SectionError as e:
            raise DefinitionError(f"cluster definition {path}: {e.key}: {e.problem}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise DefinitionError(f"cluster definition {path}: malformed {' or '.join(cls.KEYS)} ({e}); "
                                  f"compare with the shipped {provider} definitions in clusters/") from None
    if problem := schema_problem(doc):
        raise DefinitionError(f"cluster definition {path}: {problem} (its schema: clusters/{SCHEMA.name})")
    return ClusterDefinition(name=name, provider=provider, path=path, section=section)


def schema_problem(doc: dict) -> str | None:
    """How `doc` does not fit the definitions' JSON Schema, in one line (the most relevant error), or None."""
    import json

    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "the top level"
    return f"{where}: {' '.join(error.message.split())[:300]}"
