"""The conformance report: per-test results gathered from pytest's reports, and
`reports/<run>/conformance-report.yaml` (schema: schema/conformance-report.schema.json).

`Results` is registered only in the controller process, so under pytest-xdist it sees every worker's
reports; what it needs about a test travels on `report.user_properties` (`feature` and `diagnostics`
entries), which also end up in junit.xml.
"""
from __future__ import annotations

import datetime
import html
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rayconformance import features

from . import counting, release, traffic_plot

API_VERSION = "rayconformance.io/v1alpha1"
KIND = "RayConformanceReport"
FILENAME = "conformance-report.yaml"
SCHEMA = Path(__file__).parent / "schema" / "conformance-report.schema.json"
FEATURE_PROPERTY = "feature"
DIAGNOSTICS_PROPERTY = "diagnostics"
MEASUREMENT_PROPERTY = "measurement"
DESCRIPTION_PROPERTY = "description"
INCOMPLETE = "did not run to completion (interrupted)"
INTERRUPTED_PROPERTY = "rayconformance.interrupted"  # a setup report sent for a test stopped in its setup
OVERLOADED = "overloaded"
OVERLOADED_MEASUREMENT = f"environment.{OVERLOADED}"
MESSAGE_CHARS = 4000


@dataclass
class Record:
    nodeid: str
    name: str
    features: list[str]
    description: str = ""  # the behavior the test checks (its docstring)
    outcome: str = "passed"
    duration: float = 0.0
    started: float | None = None  # epoch seconds, when its setup started
    stopped: float | None = None  # epoch seconds, when its teardown ended
    reason: str | None = None
    message: str | None = None  # a failure's message (its exception's, as pytest shows it)
    diagnostics: str | None = None
    measurements: dict = field(default_factory=dict)

    @property
    def overloaded(self) -> bool:
        """It ran while the machine was starved (rayconformance.run.pressure)."""
        return bool(self.measurements.get(OVERLOADED_MEASUREMENT))


@dataclass(eq=False)  # registered as a plugin: must stay hashable
class Results:
    """A pytest plugin object: collects one Record per conformance test from the reports of all phases."""
    tests: dict[str, Record] = field(default_factory=dict)
    started: float = field(default_factory=time.time)  # epoch seconds: the run's wall clock starts here
    scheduling: dict = field(default_factory=dict)  # the workers and the order (src/rayconformance/run/workers.py)
    narrowed_by: list[str] = field(default_factory=list)  # what selected less than the claims (selection.py)
    reproduce: dict = field(default_factory=dict)  # how to run it again (src/rayconformance/run/recipe.py)

    def pytest_runtest_logreport(self, report) -> None:
        props = report.user_properties
        feats = [v for k, v in props if k == FEATURE_PROPERTY]
        if not feats:
            return
        name = features.short_name(report.nodeid.rsplit("::", 1)[-1])
        description = next((v for k, v in props if k == DESCRIPTION_PROPERTY), "")
        t = self.tests.setdefault(report.nodeid, Record(report.nodeid, name, feats, description))
        t.duration += report.duration
        if getattr(report, "start", None):
            t.started = min(t.started or report.start, report.start)
            t.stopped = max(t.stopped or report.stop, report.stop)
        t.diagnostics = next((v for k, v in props if k == DIAGNOSTICS_PROPERTY), t.diagnostics)
        prefix = f"{MEASUREMENT_PROPERTY}."
        t.measurements.update((k.removeprefix(prefix), v) for k, v in props if k.startswith(prefix))
        failed_before = t.outcome == "failed" and t.reason != INCOMPLETE
        if report.failed and (INTERRUPTED_PROPERTY, True) in props:
            t.outcome, t.reason = "failed", INCOMPLETE
        elif report.failed:
            t.outcome, t.reason = "failed", None
            t.message = t.message or failure_message(report)
        elif report.skipped and not failed_before:
            t.outcome, t.reason = "skipped", skip_reason(report)
        elif report.when == "setup":  # until its call phase reports, a test has not passed
            t.outcome, t.reason = "failed", INCOMPLETE
        elif report.when == "call":
            t.outcome, t.reason = "passed", None


class HtmlColumns:
    """A pytest plugin object adding Features and Behavior (the test's description) columns to pytest-html's
    results table, and under a traffic test's row the plot of its load (rayconformance.report.traffic_plot)."""

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "call":
            return
        prefix = f"{MEASUREMENT_PROPERTY}."
        svg = traffic_plot.plot({k.removeprefix(prefix): v for k, v in getattr(report, "user_properties", [])
                                 if k.startswith(prefix)})
        if svg:
            from pytest_html import extras

            report.extras = [*getattr(report, "extras", []), extras.html(svg)]

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells[2:2] = ["<th>Features</th>", "<th>Behavior</th>"]

    def pytest_html_results_table_row(self, report, cells: list[str]) -> None:
        props = getattr(report, "user_properties", [])
        names = [v for k, v in props if k == FEATURE_PROPERTY]
        text = next((v for k, v in props if k == DESCRIPTION_PROPERTY), "")
        cells[2:2] = [f"<td>{html.escape(', '.join(names))}</td>", f"<td>{html.escape(text)}</td>"]


def failure_message(report) -> str | None:
    """The message of a failed phase's exception (`AssertionError: expected ..., observed ...`), at most
    MESSAGE_CHARS characters; None when pytest kept none."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or (report.longrepr if isinstance(report.longrepr, str) else None)
    if not text:
        return None
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def suite_version() -> str:
    """The suite's version as a report names it (release.py: `X.Y.Z` at a clean release tag, else
    `X.Y.Z+g<commit>`)."""
    return release.suite_version()


def build(results: Results, options, env, suite_version: str) -> dict:
    """The report as a dict; `options` are the run's Options, `env` the run's Environment, `suite_version` the
    suite's as the run started (`suite_version()` then)."""
    cluster, facts = env.cluster, env.facts
    tests = list(results.tests.values())
    rows = [test_entry(t, results.started) for t in tests]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suiteVersion": suite_version,
        "runId": options.run_id,
        "mode": options.mode,
        "implementation": options.implementation,
        "operator": {"profile": options.profile.name, "featureGates": dict(options.profile.feature_gates),
                     "claimedFeatures": sorted(options.supported), "claimedBy": options.claimed_by,
                     **({"rayVersion": options.ray_version} if getattr(options, "ray_version", None) else {}),
                     **(env.operator or {})},
        "cluster": {
            "provider": options.provider,
            **({"providerReason": options.provider_reason} if getattr(options, "provider_reason", "") else {}),
            "name": cluster.name if cluster else options.cluster_name,
            "kubernetesVersion": facts.get("kubernetesVersion"),
            "nodes": facts.get("nodes"),
            "gpu": (cluster.gpu or bool(facts.get("gpus"))) if cluster else None,
            "bringupSeconds": cluster.bringup_seconds if cluster else None,
            **({"details": cluster.extra} if cluster and cluster.extra else {}),
        },
        "wallSeconds": round(time.time() - results.started, 1),
        **({"scheduling": results.scheduling} if results.scheduling else {}),
        "selection": {"full": not results.narrowed_by, "narrowedBy": results.narrowed_by,
                      **({"shard": {"index": options.shard[0], "count": options.shard[1]}}
                         if getattr(options, "shard", None) else {})},
        **({"reproduce": results.reproduce} if results.reproduce else {}),
        counting.RESOURCES_KEY: counting.resource_reports(tests, options.supported),
        "tests": rows,
    }


def test_entry(t: Record, run_started: float) -> dict:
    return {"name": t.name, "nodeid": t.nodeid, "features": t.features,
            **({"description": t.description} if t.description else {}), "outcome": t.outcome,
            "durationSeconds": round(t.duration, 3),
            **({"startSeconds": round(t.started - run_started, 1),
                "stopSeconds": round(t.stopped - run_started, 1)} if t.started and t.stopped else {}),
            **({"reason": t.reason} if t.reason else {}),
            **({"message": t.message} if t.outcome == "failed" and t.message else {}),
            **({"diagnostics": t.diagnostics} if t.diagnostics else {}),
            **({"environment": OVERLOADED} if t.outcome == "failed" and t.overloaded else {}),
            **({"measurements": t.measurements} if t.measurements else {})}


def write(run_dir: Path, report: dict) -> Path:
    path = run_dir / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(report, sort_keys=False))
    return path
