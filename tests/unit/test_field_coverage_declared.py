"""The fields the must-hold helpers declare they assert (`@record.covers(...)` and `record.declare(...)` in
testing/expect and testing/handles, read from the sources) and those conformance/field-assertions.yaml lists for the
tests' bodies: each is a field of KubeRay v1.7.0's CRDs or an operator-read key of
src/rayconformance/fieldcov/operator-keys.yaml, so nothing counts a field no CRD has; and the file names only tests the
suite has."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rayconformance.fieldcov import assertions_file, coverage, paths

ROOT = Path(__file__).resolve().parents[2]
HELPERS = [ROOT / "src" / "rayconformance" / "testing" / "expect",
           ROOT / "src" / "rayconformance" / "testing" / "handles"]
DATA = Path(__file__).parent / "data" / "fieldcov"
CRD_FILES = {"RayCluster": "ray.io_rayclusters.v1.7.0.yaml", "RayJob": "ray.io_rayjobs.v1.7.0.yaml",
             "RayService": "ray.io_rayservices.v1.7.0.yaml", "RayCronJob": "ray.io_raycronjobs.v1.7.0.yaml"}
MAX_BYTES = 2_000_000
DECLARING = ("covers", "declare")  # record.covers (a helper's decorator) and record.declare (inline)


def _declaring_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in DECLARING and not (isinstance(func, ast.Attribute) and ast.unparse(func).startswith("pytest."))


def declared() -> list[tuple[str, object]]:
    """(file:line, the declared field: a string, or the source text of what is not one) for every declaration."""
    out = []
    for folder in HELPERS:
        for path in sorted(folder.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if _declaring_call(node):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    out += [(where, a.value if isinstance(a, ast.Constant) and isinstance(a.value, str)
                             else ast.unparse(a)) for a in node.args]
    return out


@pytest.fixture(scope="module")
def crds() -> dict[str, dict]:
    return {kind: yaml.load((DATA / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for kind, name in CRD_FILES.items()}


def in_schema(schema: dict, segments: tuple[str, ...]) -> bool:
    """The path names properties (and `[]` array items) of the openAPIV3Schema all the way down: no map key."""
    node = schema
    for s in segments:
        node = node.get("items") if s == paths.ITEMS else (node.get("properties") or {}).get(s)
        if not isinstance(node, dict):
            return False
    return True


def test_the_reduced_crds_are_kuberay_v1_7_0s_v1_schemas_without_descriptions(crds):
    for kind, crd in crds.items():
        assert crd["spec"]["names"]["kind"] == kind and [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
        assert (DATA / CRD_FILES[kind]).stat().st_size < MAX_BYTES, f"{CRD_FILES[kind]} is over 2 MB"
        assert "description:" not in (DATA / CRD_FILES[kind]).read_text(), f"{CRD_FILES[kind]} has descriptions"


def not_in_the_crds(found: list[tuple[str, object]], crds: dict[str, dict]) -> list[str]:
    """A line for each (where, field) of `found` that is neither a field of the v1.7.0 CRDs nor an operator-read
    key."""
    keys = coverage.load_keys()
    fields = {kind: {f.segments for f in coverage.crd_fields(crd, keys)} for kind, crd in crds.items()}
    schemas = {kind: coverage.crd_schema(crd)[1] for kind, crd in crds.items()}
    wrong = []
    for where, field in found:
        try:
            kind, segments = paths.parse(field)
        except paths.PathError as e:
            wrong.append(f"{where}: {e}")
            continue
        if kind not in CRD_FILES:
            wrong.append(f"{where}: {field}: no kind {kind} among {sorted(CRD_FILES)}")
        elif segments not in fields[kind] and not in_schema(schemas[kind], segments):
            wrong.append(f"{where}: {field} is neither a field of the v1.7.0 {kind} CRD nor an operator-read key "
                         f"of src/rayconformance/fieldcov/operator-keys.yaml")
    return wrong


def test_every_field_a_helper_declares_is_in_the_v1_7_0_crds_or_an_operator_read_key(crds):
    found = declared()
    assert {f.partition(":")[0] for _, f in found if isinstance(f, str)} >= set(CRD_FILES), \
        f"the helpers declare fields of every kind; found only {sorted({f for _, f in found})}"
    wrong = not_in_the_crds(found, crds)
    assert not wrong, "declared fields no CRD has:\n  " + "\n  ".join(wrong)


def test_every_field_the_assertions_file_lists_is_in_the_v1_7_0_crds_or_an_operator_read_key(crds):
    listed = assertions_file.load(ROOT).entries
    found = [(f"{assertions_file.WHERE}: {name}", f) for name, fields in listed.items() for f in fields]
    # (the RayCronJob tests declare theirs in their modules; the file lists none)
    assert {f.partition(":")[0] for _, f in found} == set(CRD_FILES) - {"RayCronJob"}, \
        f"the file lists fields of every kind; found only {sorted({f for _, f in found})}"
    wrong = not_in_the_crds(found, crds)
    assert not wrong, "listed fields no CRD has:\n  " + "\n  ".join(wrong)


def test_every_test_the_assertions_file_names_is_a_conformance_test():
    """Its names are test functions of conformance/ (`def test_<name>(`), its parameter ids parametrizations the
    plugin collects."""
    listed = assertions_file.load(ROOT).entries  # a name no conformance module defines raises
    defined = assertions_file.defined_tests(ROOT / "conformance")
    assert not [name for name in listed if name.partition("[")[0] not in defined]
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "conformance", "--all-features",
                        "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"collecting the conformance suite failed:\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    collected = {line.rpartition("::")[2] for line in r.stdout.splitlines() if "::" in line}
    unknown = [name for name in listed if "[" in name and name not in collected]
    assert not unknown, f"{assertions_file.WHERE} names parametrizations the suite does not collect: {unknown}"


def test_a_field_not_in_the_crds_is_found_out(crds):
    schema = coverage.crd_schema(crds["RayCluster"])[1]
    assert in_schema(schema, paths.split("spec.workerGroupSpecs[].template.spec.nodeSelector"))
    assert not in_schema(schema, paths.split("spec.workerGroupSpecs[].nosuchfield"))
    assert not in_schema(schema, paths.split("spec.headGroupSpec.rayStartParams[no-such-key]"))
