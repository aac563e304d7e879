"""What one test sets and asserts, recorded in the process that runs it (an xdist worker or the only process).

`record_body` is called with every body the suite creates or patches ray.io objects with (testing/ray.py
RayResources); `declare`, the `covers` marker and decorator, and the test's entries in
conformance/field-assertions.yaml (assertions_file.py) name the fields whose effect the test asserts;
`declare_copied` names fields the test asserted were copied unchanged into another object (copies.py). At the
test's teardown the recording is put on its report (attribute `REPORT_ATTR`), which xdist carries to the controller
as it carries every report attribute; there `coverage.FieldRecords` gathers them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import pytest

from . import assertions_file
from .copies import Copied, check_all
from .paths import PathError, body_paths, parse

MARKER = "covers"
MARKER_HELP = (f"{MARKER}(*fields): the ray.io fields whose effect the test asserts, as 'Kind:path' (e.g. "
               "'RayCluster:spec.suspend', 'RayCluster:spec.headGroupSpec.rayStartParams[num-cpus]'); "
               "the report's fieldCoverage counts them (src/rayconformance/fieldcov)")
REPORT_ATTR = "rayconformance_fields"


@dataclass
class Recording:
    """One test's fields: set (`(kind, *segments)`), declared asserted (`Kind:path`), declared copied, and whether
    its call ran."""
    set_paths: set[tuple[str, ...]] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)
    copied: set[Copied] = field(default_factory=set)
    ran: bool = False

    def to_report(self, marked: list[str]) -> dict:
        """What travels on the report: the marker's fields count only for a test whose call ran (not skipped)."""
        out = {"set": sorted(list(p) for p in self.set_paths),
               "asserted": sorted(self.declared | (set(marked) if self.ran else set()))}
        if self.copied:
            out["copied"] = [[c.source, c.target, c.path] for c in sorted(self.copied)]
        return out


class _Active:
    recording: Recording | None = None  # the test running in this process, from its setup to its teardown


def record_body(kind: str, body: dict | list) -> None:
    """Note the fields a create or patch body of a `kind` object sets, for the test that runs now (if any)."""
    rec = _Active.recording
    if rec is not None:
        rec.set_paths |= {(kind, *p) for p in body_paths(body)}


def check(fields, where: str) -> None:
    """Fail the test (one line) when a declared field is not `Kind:path`."""
    for f in fields:
        try:
            parse(f)
        except PathError as e:
            pytest.fail(f"{where}: {e}", pytrace=False)


def declare(*fields: str) -> None:
    """The running test asserts the effect of these fields (`Kind:path`); for must-hold helpers and `ctx.covers`."""
    check(fields, "covers")
    rec = _Active.recording
    if rec is not None:
        rec.declared.update(fields)


def declare_copied(source: str, target: str, paths) -> None:
    """The running test asserted that the owner's values at `paths` (relative to `source`, e.g. "headGroupSpec.labels",
    "workerGroupSpecs[].template.spec.containers[].env") reached the object the operator made, at the same paths
    relative to `target`, unchanged:

        record.declare_copied("RayJob:spec.rayClusterSpec", "RayCluster:spec", ["headGroupSpec.serviceType", ...])

    Such an owner field counts as asserted *through its copy* (never as asserted directly) when the run asserts
    its target field, directly or through another copy (copies.py). Declare it only after the comparison passed,
    and keep `paths` literal module-level data, so bench/fieldcov_static.py can read it."""
    try:
        found = check_all(source, target, paths)
    except PathError as e:
        pytest.fail(f"declare_copied: {e}", pytrace=False)
    rec = _Active.recording
    if rec is not None:
        rec.copied.update(found)


def covers(*fields: str):
    """A decorator for a must-hold helper: each call declares that the running test asserts these fields."""
    def decorate(check_fn):
        @functools.wraps(check_fn)
        def declaring(*args, **kwargs):
            __tracebackhide__ = True
            declare(*fields)
            return check_fn(*args, **kwargs)
        return declaring
    return decorate


def marked(item: pytest.Item) -> list[str]:
    """The fields a test's `covers` markers name (its own, its class's and its module's)."""
    return [a for m in item.iter_markers(MARKER) for a in m.args]


class Recorder:
    """A pytest plugin object in every process of a conformance run that runs tests. It reads the fields listed
    in conformance/field-assertions.yaml (assertions_file.py) before the run collects, and counts each test's
    entries as its `covers` marker."""

    def __init__(self) -> None:
        self.listed = assertions_file.Listed()

    @pytest.hookimpl(tryfirst=True)  # before the run brings anything up
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        try:
            self.listed = assertions_file.load(session.config.rootpath)
        except assertions_file.AssertionsFileError as e:
            raise pytest.UsageError(str(e)) from None

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector):
        """An entry naming a parametrization its test does not have fails the collection of the test's module."""
        rep = yield
        if rep.passed and self.listed.entries:
            problems = self.listed.parameter_problems([n for n in rep.result if isinstance(n, pytest.Item)])
            if problems:
                rep.outcome, rep.longrepr, rep.result = "failed", "\n".join(problems), []
        return rep

    @pytest.hookimpl(tryfirst=True)  # before the fixtures' setup, which may create objects
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        _Active.recording = Recording()
        check(marked(item), f"@pytest.mark.{MARKER} of {item.name}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        rep = yield
        rec = _Active.recording
        if rec is not None and call.when == "call" and not rep.skipped:
            rec.ran = True
        if rec is not None and call.when == "teardown":
            setattr(rep, REPORT_ATTR, rec.to_report(marked(item) + self.listed.fields(item)))
            _Active.recording = None
        return rep
