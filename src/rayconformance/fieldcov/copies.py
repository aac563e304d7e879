"""Fields asserted through a copy: an owner's field that a test asserted reached the object the operator makes from it
unchanged (a RayJob's `spec.rayClusterSpec` copied into its RayCluster's `spec`) counts as asserted *through its
copy* when the field it was copied to is itself asserted in the same run, directly or through another copy
(a RayCronJob's `spec.jobTemplate` -> its RayJob's `spec` -> that RayJob's RayCluster's `spec`).

A test declares a copy with `record.declare_copied(source, target, paths)` (record.py): `source` and `target` are
`Kind:path` (the owner's copied subtree, where it lands), `paths` the paths under both it checked, relative
(`headGroupSpec.serviceType`, `workerGroupSpecs[].labels`, `[key]` for a map key). As for `covers`, a path
covers the fields under it and the node it lies in. The report keeps these fields apart from those asserted
directly (`throughCopy` of a CRD's row), and lists each covered owner field with its target (`copies`), so that
the sections of a sharded run's reports merge exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

from .paths import Field, PathError, parse, split

SECTION_KEY = "copies"  # the section's list of {"field": owner field, "to": target field}


@dataclass(frozen=True, order=True)
class Copied:
    """One declared copy: the owner's subtree `source`, where it lands `target` (both `Kind:path`), and the
    relative `path` under both that a test asserted arrived unchanged."""
    source: str
    target: str
    path: str

    @property
    def text(self) -> str:
        return f"{self.source}.{self.path} (copied to {self.target})"

    def check(self) -> None:
        """A PathError (one line) when a part is not what it must be."""
        for name in (self.source, self.target):
            parse(name)
        if not isinstance(self.path, str) or not split(self.path):
            raise PathError(f"copied path {self.path!r} of {self.source} is not a relative path like "
                            f"'headGroupSpec.serviceType' or 'workerGroupSpecs[].rayStartParams[num-cpus]'")


def check_all(source: str, target: str, paths) -> list[Copied]:
    """The copies a declaration makes; a PathError (one line) for the first part that is wrong."""
    if isinstance(paths, str) or not paths:
        raise PathError(f"the copied paths of {source} must be a non-empty list of relative paths, not {paths!r}")
    out = [Copied(source, target, p) for p in paths]
    for c in out:
        c.check()
    return out


def _near(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """`a` is at, under or above `b`."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def relations(declared: set[Copied], counted: dict[str, list[Field]]) -> tuple[set[tuple[str, str]], set[str]]:
    """(owner field, target field) names for every counted field of an owner a declaration covers whose target is a
    counted field of its kind (`counted`: kind -> its fields, exclusions left out); and the text of each declaration
    that covers no such field."""
    by_segments = {kind: {f.segments: f for f in fields} for kind, fields in counted.items()}
    found, unused = set(), set()
    for c in declared:
        (s_kind, s_at), (t_kind, t_at), rel = parse(c.source), parse(c.target), split(c.path)
        hit = False
        for f in counted.get(s_kind, ()):
            below = f.segments[len(s_at):]
            if f.segments[:len(s_at)] != s_at or not below or not _near(below, rel):
                continue
            target = by_segments.get(t_kind, {}).get(t_at + below)
            if target is not None:
                found.add((f.name, target.name))
                hit = True
        if not hit:
            unused.add(c.text)
    return found, unused


def through(pairs: set[tuple[str, str]], not_direct: set[str]) -> set[str]:
    """The owner fields asserted through a copy: not asserted directly (in `not_direct`, the counted fields no
    declaration asserts), and copied to a field asserted directly (not in `not_direct`) or itself through a copy."""
    out: set[str] = set()
    grew = True
    while grew:
        grew = False
        for owner, target in pairs:
            if owner in not_direct and owner not in out and (target not in not_direct or target in out):
                out.add(owner)
                grew = True
    return out


def listed(pairs: set[tuple[str, str]]) -> list[dict]:
    """The section's `copies`: each covered owner field and the field it was copied to."""
    return [{"field": f, "to": t} for f, t in sorted(pairs)]


def from_listed(items) -> set[tuple[str, str]]:
    return {(i["field"], i["to"]) for i in items or () if isinstance(i, dict) and "field" in i and "to" in i}
