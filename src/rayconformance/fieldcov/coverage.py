"""The field-coverage section of a report: per ray.io CRD read from the cluster, its fields (schema paths and the
operator-read keys of operator-keys.yaml), which some test set, which some test asserted directly, which are asserted
only through a copy (copies.py), and which are excluded (exclusions.yaml, with why); `FieldRecords` gathers the tests'
recordings in the controller and makes the section once, while the cluster is still there.

A row's `asserted`, `uncovered` and `setNotAsserted` count direct assertions only, as before copies were counted;
`assertedThroughCopy` and `throughCopy` are the fields among the unasserted ones that a copy covers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rayconformance.errors import one_line

from . import copies
from .copies import Copied
from .paths import Field, key_fields, parse, prefixes, schema_fields, split
from .record import REPORT_ATTR

HERE = Path(__file__).resolve().parent
KEYS_FILE = HERE / "operator-keys.yaml"
EXCLUSIONS_FILE = HERE / "exclusions.yaml"
GROUP, VERSION = "ray.io", "v1"
KIND_ORDER = ("RayCluster", "RayJob", "RayService", "RayCronJob")
SECTION = "fieldCoverage"
READ_TIMEOUT = 15  # seconds for listing the cluster's CRDs


@dataclass(frozen=True)
class Exclusion:
    """A field no test can cover here: `Kind:path` (that path and all under it) or `*:path` (wherever it stands)."""
    field: str
    reason: str

    @property
    def where(self) -> tuple[str, tuple[str, ...]]:
        kind, _, text = self.field.partition(":")
        return (kind, split(text)) if kind == "*" else parse(self.field)

    def matches(self, f: Field) -> bool:
        kind, segments = self.where
        if kind != "*":
            return f.kind == kind and f.segments[:len(segments)] == segments
        n = len(segments)
        return n > 0 and any(f.segments[i:i + n] == segments for i in range(len(f.segments) - n + 1))


def load_keys(path: Path = KEYS_FILE) -> dict:
    return yaml.safe_load(path.read_text())


def load_exclusions(path: Path = EXCLUSIONS_FILE) -> list[Exclusion]:
    return [Exclusion(e["field"], " ".join(str(e["reason"]).split())) for e in yaml.safe_load(path.read_text()) or []]


def crd_schema(crd: dict) -> tuple[str, dict] | None:
    """(version, openAPIV3Schema) of a CRD: its served `v1`, else its storage version; None without a schema."""
    versions = (crd.get("spec") or {}).get("versions") or []
    chosen = next((v for v in versions if v.get("name") == VERSION and v.get("served")), None) or \
        next((v for v in versions if v.get("storage")), None)
    schema = ((chosen or {}).get("schema") or {}).get("openAPIV3Schema")
    return (chosen["name"], schema) if schema else None


def crd_fields(crd: dict, keys: dict) -> list[Field]:
    """The countable fields of one CRD: its spec paths, then the operator-read keys of its maps and annotations."""
    kind = crd["spec"]["names"]["kind"]
    found = crd_schema(crd)
    fields = schema_fields(kind, found[1]) if found else []
    maps = [f for f in fields if f.node == "map"]
    return fields + key_fields(kind, maps, {g: list(k or {}) for g, k in (keys.get("rayStartParams") or {}).items()},
                               list((keys.get("annotations") or {}).get(kind) or {}))


def ray_crds(crds: list[dict]) -> list[dict]:
    """The CRDs of the ray.io group, RayCluster, RayJob, RayService, RayCronJob first."""
    ours = [c for c in crds if (c.get("spec") or {}).get("group") == GROUP]
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    return sorted(ours, key=lambda c: (rank.get(c["spec"]["names"]["kind"], len(rank)), c["spec"]["names"]["kind"]))


def _percent(n: int, of: int) -> float:
    return round(100.0 * n / of, 1) if of else 0.0


def _with_copies(rows: list[dict], pairs: set[tuple[str, str]]) -> list[dict]:
    """The rows with the fields asserted through a copy: those of their unasserted fields `pairs` lead to an
    asserted field."""
    not_direct = {f"{r['kind']}:{t}" for r in rows for t in (*r["uncovered"], *r["setNotAsserted"])}
    via = copies.through(pairs, not_direct)
    out = []
    for r in rows:
        counted = r["fields"] - r["excluded"]
        mine = [t for t in (*r["uncovered"], *r["setNotAsserted"]) if f"{r['kind']}:{t}" in via]
        out.append({**r, "assertedThroughCopy": len(mine),
                    "assertedThroughCopyPercent": _percent(len(mine), counted), "throughCopy": mine})
    return out


def section(crds: list[dict] | str, set_paths: set[tuple[str, ...]], asserted: set[str],
            keys: dict | None = None, exclusions: list[Exclusion] | None = None,
            copied: set[Copied] = frozenset()) -> dict:
    """The report's `fieldCoverage`: `crds` are the cluster's CRDs (or why they could not be read), `set_paths`
    `(kind, *segments)` from created and patched bodies, `asserted` the declared `Kind:path` fields, `copied` the
    declared copies."""
    keys = load_keys() if keys is None else keys
    exclusions = load_exclusions() if exclusions is None else exclusions
    read = keys.get("readFrom") or {}
    head = {"operatorKeys": f"{read.get('project', '?')} {read.get('version', '?')}"}
    if isinstance(crds, str):
        return {"crdsRead": False, "reason": crds, **head}
    was_set = prefixes(set_paths)
    declared = {}  # Kind:path -> (kind, *segments)
    for name in asserted:
        kind, segments = parse(name)
        declared[name] = (kind, *segments)
    used, matched, rows, counted_fields = set(), {e.field: 0 for e in exclusions}, [], {}
    for crd in ray_crds(crds):
        fields = crd_fields(crd, keys)
        row = {"kind": crd["spec"]["names"]["kind"], "crd": crd["metadata"]["name"],
               "version": (crd_schema(crd) or ("?",))[0], "fields": len(fields)}
        counted, uncovered, unasserted, n_set, n_asserted = 0, [], [], 0, 0
        for f in fields:
            key = (f.kind, *f.segments)
            by = {n for n, d in declared.items() if d[:len(key)] == key or key[:len(d)] == d}  # at, under, above
            used |= by
            gone = next((e for e in exclusions if e.matches(f)), None)
            if gone:
                matched[gone.field] += 1
                continue
            counted += 1
            counted_fields.setdefault(f.kind, []).append(f)
            n_set, n_asserted = n_set + (key in was_set), n_asserted + bool(by)
            if not by:
                (unasserted if key in was_set else uncovered).append(f.text)
        rows.append({**row, "excluded": len(fields) - counted, "set": n_set, "asserted": n_asserted,
                     "setPercent": _percent(n_set, counted), "assertedPercent": _percent(n_asserted, counted),
                     "uncovered": uncovered, "setNotAsserted": unasserted})
    pairs, unused = copies.relations(set(copied), counted_fields)
    return {"crdsRead": True, **head, "crds": _with_copies(rows, pairs),
            "exclusions": [{"field": e.field, "reason": e.reason, "matched": matched[e.field]} for e in exclusions],
            "unknownDeclarations": sorted((set(declared) - used) | unused), copies.SECTION_KEY: copies.listed(pairs)}


def merged(sections: list[dict | None]) -> dict:
    """One section from the sections of a sharded run's reports: a field is set (asserted) when some shard set
    (asserted) it. Each shard lists what it did not set (`uncovered`) and did not assert (`uncovered` and
    `setNotAsserted`); the merged lists are what no shard did. Shards that read different CRDs, or could not read
    them, make a section that says so. A field counts as asserted through a copy when its copy's target is asserted
    in the merged section (the run as a whole), whichever shard declared the copy."""
    if not sections or any(not s or not s.get("crdsRead") for s in sections):
        why = next((s.get("reason") for s in sections if s and not s.get("crdsRead")), None)
        return {"crdsRead": False, "reason": f"a shard has no field coverage: {why or 'no fieldCoverage section'}",
                "operatorKeys": (sections[0] or {}).get("operatorKeys", "?") if sections else "?"}
    first = sections[0]
    shapes = {repr([(r["kind"], r["crd"], r["version"], r["fields"], r["excluded"]) for r in s["crds"]])
              for s in sections}
    if len(shapes) > 1:
        return {"crdsRead": False, "reason": "the shards read different CRDs: their field coverage is not merged",
                "operatorKeys": first.get("operatorKeys", "?")}
    rows = []
    for i, row in enumerate(first["crds"]):
        per = [s["crds"][i] for s in sections]
        uncovered = set.intersection(*(set(r["uncovered"]) for r in per))
        unasserted = set.intersection(*(set(r["uncovered"]) | set(r["setNotAsserted"]) for r in per))
        counted = row["fields"] - row["excluded"]
        n_set, n_asserted = counted - len(uncovered), counted - len(unasserted)
        rows.append({**row, "set": n_set, "asserted": n_asserted, "setPercent": _percent(n_set, counted),
                     "assertedPercent": _percent(n_asserted, counted),
                     "uncovered": [f for f in row["uncovered"] if f in uncovered],
                     "setNotAsserted": [f for f in (*row["uncovered"], *row["setNotAsserted"])
                                        if f in unasserted - uncovered]})
    pairs = set().union(*(copies.from_listed(s.get(copies.SECTION_KEY)) for s in sections))
    unknown = set().union(*(s.get("unknownDeclarations") or () for s in sections))
    return {**first, "crds": _with_copies(rows, pairs), "unknownDeclarations": sorted(unknown),
            copies.SECTION_KEY: copies.listed(pairs)}


def read_crds(kubeconfig: Path | str | None) -> list[dict] | str:
    """The cluster's CRDs as plain dicts, or a line saying why they could not be read."""
    if not kubeconfig:
        return "CRDs not readable: no cluster was brought up"
    import json

    from kubernetes import client

    from rayconformance.kube.client import api_client

    try:
        api = api_client(kubeconfig, retries=0)
        try:
            raw = client.ApiextensionsV1Api(api).list_custom_resource_definition(
                _preload_content=False, _request_timeout=READ_TIMEOUT)
            return json.loads(raw.data).get("items") or []
        finally:
            api.close()
    except Exception as e:  # noqa: BLE001 - any failure to read is a line in the report, not a failed run
        return f"CRDs not readable: {one_line(e)[:300]}"


@dataclass(eq=False)  # registered as a plugin: must stay hashable
class FieldRecords:
    """A pytest plugin object in the controller: the fields every test set and asserted, from the recordings on
    their reports (also those xdist workers send)."""
    set_paths: set[tuple[str, ...]] = field(default_factory=set)
    asserted: set[str] = field(default_factory=set)
    copied: set[Copied] = field(default_factory=set)
    made: dict | None = None  # the section, once made

    def pytest_runtest_logreport(self, report) -> None:
        data = getattr(report, REPORT_ATTR, None)
        if data:
            self.set_paths |= {tuple(p) for p in data.get("set") or ()}
            self.asserted |= set(data.get("asserted") or ())
            self.copied |= {Copied(*c) for c in data.get("copied") or ()}

    def section(self, env) -> dict:
        """The section for the run's environment (`rayconformance.run.environment.Environment`), made on the first
        call."""
        if self.made is None:
            cluster = getattr(env, "cluster", None)
            try:
                self.made = section(read_crds(cluster.kubeconfig if cluster else None), self.set_paths, self.asserted,
                                    copied=self.copied)
            except Exception as e:  # noqa: BLE001 - the measure failing must not cost the run its report
                self.made = {"crdsRead": False, "reason": f"field coverage not computed: {one_line(e)[:300]}",
                             "operatorKeys": "?"}
        return self.made


def placed(report: dict, section: dict) -> dict:
    """The report with its fieldCoverage section put before its list of tests (the long part last)."""
    tests = {"tests": report["tests"]} if "tests" in report else {}
    return {**{k: v for k, v in report.items() if k not in ("tests", SECTION)}, SECTION: section, **tests}
