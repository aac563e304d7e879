"""The matrix report model: cells (one column each: a profile at a Ray version, and what its run left), and the
report built from them: per test its outcome per column, per feature its verdict per column, the features whose
verdicts differ between columns, and the contradictions of a profile's claims (a claimed feature failing in a test
whose features are all claimed, or its run leaving no report; an unclaimed feature passing, in runs that test it,
e.g. `--all-features`).

Built from run directories alone (each with the suite's conformance-report.yaml): running is run.py's job.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rayconformance import features
from rayconformance.operator import profiles
from rayconformance.report.counting import resource_blocks
from rayconformance.report.results import FILENAME as RUN_REPORT

from . import NOT_RUN, UNSUPPORTED, MatrixError
from .html import render_html

API_VERSION = "rayconformance.io/v1alpha1"
KIND = "RayConformanceMatrix"
FILENAME = "matrix-report.yaml"
HTML = "matrix.html"


@dataclass
class Cell:
    """One column of the matrix: a profile at a Ray version, and what its run left."""
    profile: str
    ray_version: str
    run_dir: Path | None = None
    report: dict | None = None
    error: str | None = None  # why there is no report (bring-up failed, usage error, ...)
    wall_seconds: float | None = None
    claims: tuple[str, ...] = ()
    args: list[str] = field(default_factory=list)
    label: str | None = None  # set when two cells share profile@version (the run id tells them apart)

    @property
    def column(self) -> str:
        return self.label or f"{self.profile}@{self.ray_version}"

    def load(self) -> None:
        """Read the run's report, if it wrote one."""
        path = self.run_dir / RUN_REPORT if self.run_dir else None
        if path and path.is_file():
            self.report = yaml.safe_load(path.read_text())

    def summary(self) -> str:
        if self.report is None:
            return self.error or "no report"
        n = {"passed": 0, "failed": 0, "skipped": 0}
        for t in self.report.get("tests", []):
            n[t["outcome"]] = n.get(t["outcome"], 0) + 1
        return ", ".join(f"{v} {k}" for k, v in n.items())


def cells_from_runs(run_dirs: list[Path], claims: dict[str, list[str]] | None = None) -> list[Cell]:
    """Cells from recorded runs (each a directory with a conformance-report.yaml). A profile's claims come from
    `claims` (profile name -> features) if given, else from profiles/ as it is now, else from the report."""
    cells = []
    for d in run_dirs:
        path = d / RUN_REPORT
        if not path.is_file():
            raise MatrixError(f"{d}: no {RUN_REPORT}; pass run directories under reports/")
        report = yaml.safe_load(path.read_text())
        op = report.get("operator") or {}
        name = op.get("profile", "?")
        try:
            claimed = tuple(claims[name]) if claims is not None else profiles.load(name).features
        except (profiles.ProfileError, KeyError):
            claimed = tuple(f for p in resource_blocks(report) for lvl in ("core", "extended")
                            for f in p.get(lvl, {}).get("supportedFeatures", []))
        cells.append(Cell(name, op.get("rayVersion") or "?", run_dir=d, report=report, claims=claimed,
                          wall_seconds=report.get("wallSeconds")))
    return cells


def keep_common_tests(cells: list[Cell]) -> int:
    """Narrow every cell's report to the tests every report lists (e.g. whole-suite runs beside runs of a
    selection, so the matrix compares like with like); returns how many tests remain."""
    reports = [c.report for c in cells if c.report]
    common = set.intersection(*({t["name"] for t in r.get("tests", [])} for r in reports)) if reports else set()
    for c in cells:
        if c.report:
            c.report = {**c.report, "tests": [t for t in c.report.get("tests", []) if t["name"] in common]}
    return len(common)


def test_outcome(t: dict) -> str:
    if t["outcome"] == "skipped" and "unsupported" in (t.get("reason") or "").lower():
        return UNSUPPORTED
    return t["outcome"]


def feature_verdict(outcomes: list[str]) -> str:
    """A feature's verdict in one run from its tests' outcomes."""
    if "failed" in outcomes:
        return "failed"
    if "passed" in outcomes:
        return "passed"
    if UNSUPPORTED in outcomes:
        return UNSUPPORTED
    return "skipped" if "skipped" in outcomes else NOT_RUN


def label_repeated_columns(cells: list[Cell]) -> None:
    seen: dict[str, int] = {}
    for c in cells:
        seen[c.column] = seen.get(c.column, 0) + 1
    for c in cells:
        if seen.get(f"{c.profile}@{c.ray_version}", 0) > 1 and c.label is None:
            c.label = f"{c.profile}@{c.ray_version}#{(c.report or {}).get('runId') or c.run_dir}"


def test_rows(cells: list[Cell]) -> dict[str, dict]:
    """Per test: its features, its outcome per column, and the reason of each failure."""
    tests: dict[str, dict] = {}
    for c in cells:
        for t in (c.report or {}).get("tests", []):
            row = tests.setdefault(t["name"], {"name": t["name"], "features": list(t.get("features", [])),
                                               "outcomes": {}, "reasons": {}})
            row["outcomes"][c.column] = test_outcome(t)
            if t["outcome"] == "failed" and t.get("reason"):
                row["reasons"][c.column] = " ".join(str(t["reason"]).split())[:400]
    for row in tests.values():
        for c in cells:
            row["outcomes"].setdefault(c.column, NOT_RUN)
        if not row["reasons"]:
            del row["reasons"]
    return tests


def feature_rows(cells: list[Cell], tests: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """Per feature that has tests or claims: its verdict per column; and the contradictions of the claims."""
    feats, contradictions = [], []
    for f in features.FEATURES:
        rows = [r for r in tests.values() if f.name in r["features"]]
        results = {}
        for c in cells:
            claimed = f.name in c.claims
            verdict = (feature_verdict([r["outcomes"][c.column] for r in rows]) if c.report is not None
                       else "error" if claimed and c.error else NOT_RUN)  # (no error: not run yet)
            results[c.column] = {"claimed": claimed, "verdict": verdict}
            # a claim covers the tests whose features are all claimed: a test that also needs an unclaimed feature
            # (run by --all-features) failing there says nothing against this claim
            within = [r for r in rows if all(x in c.claims for x in r["features"])]
            held = (feature_verdict([r["outcomes"][c.column] for r in within]) if c.report is not None else verdict)
            if claimed and held in ("failed", "error"):
                contradictions.append({"column": c.column, "feature": f.name, "claimed": True, "verdict": held,
                                       "tests": sorted(r["name"] for r in within
                                                       if r["outcomes"][c.column] == "failed"),
                                       **({"error": c.error} if held == "error" else {})})
            elif not claimed and verdict == "passed":
                contradictions.append({"column": c.column, "feature": f.name, "claimed": False, "verdict": "passed",
                                       "tests": sorted(r["name"] for r in rows if r["outcomes"][c.column] == "passed")})
        if rows or any(v["claimed"] for v in results.values()):
            feats.append({"name": f.name, "resource": f.resource, "level": f.level, "results": results})
    return feats, contradictions


def differences(feats: list[dict], columns: list[str]) -> list[dict]:
    """The features whose verdict (among the columns that ran them), or whose claim, is not the same everywhere."""
    out = []
    for f in feats:
        verdicts = {col: r["verdict"] for col, r in f["results"].items() if r["verdict"] not in (NOT_RUN, "skipped")}
        claims = {col: r["claimed"] for col, r in f["results"].items()}
        if len(set(verdicts.values())) > 1 or (verdicts and len(set(claims.values())) > 1):
            out.append({"feature": f["name"], "verdicts": {col: f["results"][col]["verdict"] for col in columns},
                        "claimedBy": [col for col in columns if claims[col]]})
    return out


def column(c: Cell) -> dict:
    report = c.report or {}
    return {"column": c.column, "profile": c.profile, "rayVersion": c.ray_version,
            "operatorVersion": (report.get("operator") or {}).get("version")
            or (report.get("implementation") or {}).get("version"),
            "runId": report.get("runId"), "runDir": str(c.run_dir) if c.run_dir else None,
            "wallSeconds": c.wall_seconds, "summary": c.summary(), "claims": list(c.claims),
            **({"args": c.args} if c.args else {}), **({"error": c.error} if c.error else {})}


def build(cells: list[Cell], matrix_id: str, skipped: list[str] | None = None) -> dict:
    label_repeated_columns(cells)
    tests = test_rows(cells)
    feats, contradictions = feature_rows(cells, tests)
    return {
        "apiVersion": API_VERSION, "kind": KIND, "matrixId": matrix_id,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "columns": [column(c) for c in cells],
        **({"notRun": skipped} if skipped else {}),
        "tests": sorted(tests.values(), key=lambda r: (r["features"][:1], r["name"])),
        "features": feats,
        "differences": differences(feats, [c.column for c in cells]),
        "contradictions": contradictions,
    }


def write(report: dict, out: Path) -> tuple[Path, Path]:
    """matrix-report.yaml and matrix.html in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    y, h = out / FILENAME, out / HTML
    y.write_text(yaml.safe_dump(report, sort_keys=False, width=120))
    h.write_text(render_html(report))
    return y, h
