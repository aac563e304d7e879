"""What the run keeps of each test's phases: whether it failed, where its diagnostics go, and when they are
saved — before any fixture's teardown changes what the test left behind — plus their link in report.html.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest

from rayconformance import features

from .results import DIAGNOSTICS_PROPERTY, INTERRUPTED_PROPERTY

PHASE_REPORTS = pytest.StashKey[dict]()
DIAGNOSE = pytest.StashKey[Callable[[], None]]()  # saves this test's diagnostics (the namespace fixture's)


def failed(item: pytest.Item) -> bool:
    return any(r.failed for r in item.stash.get(PHASE_REPORTS, {}).values())


def diagnostics_dir(run_dir: Path, item: pytest.Item) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", features.short_name(item.name)).strip("-")
    return run_dir / "diagnostics" / name


def record_diagnostics(item: pytest.Item, run_dir: Path, path: Path) -> None:
    entry = (DIAGNOSTICS_PROPERTY, path.relative_to(run_dir).as_posix())
    if entry not in item.user_properties:
        item.user_properties.append(entry)


class Failures:
    """A pytest plugin object for one conformance run."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        rep = yield
        item.stash.setdefault(PHASE_REPORTS, {})[rep.when] = rep
        if rep.when == "teardown" and item.config.pluginmanager.hasplugin("html"):
            path = next((v for k, v in item.user_properties if k == DIAGNOSTICS_PROPERTY), None)
            if path:
                from pytest_html import extras

                rep.extras = [*getattr(rep, "extras", []), extras.url(path, name="diagnostics")]
        return rep

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        """A run stopped while a test's setup runs (its cluster's bring-up, often) gets no setup report from pytest:
        one is sent, so the report names the test as interrupted rather than leaving it out."""
        try:
            return (yield)
        except KeyboardInterrupt as e:
            item.ihook.pytest_runtest_logreport(report=pytest.TestReport(
                item.nodeid, item.location, {}, "failed", f"stopped while its setup ran ({e or 'interrupted'})",
                "setup", user_properties=[*item.user_properties, (INTERRUPTED_PROPERTY, True)]))
            raise

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem):
        save = item.stash.get(DIAGNOSE, None)
        if save is not None:
            save()
        return (yield)
