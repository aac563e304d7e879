"""Bringing the run's environment up once, and only if a test that will run needs it.

After collection, the tests that will run say whether they need the `cluster` and the `operator` fixtures.
Without xdist the (only) process brings them up right away. Under xdist each worker writes what its
collection needs to `<run dir>/needs.json`, and the controller brings the environment up when a worker
has finished collecting, before any test is scheduled; workers then read `environment.json`. The samples the
selected tests declare (testing.context) are checked first (a missing or broken one stops the run in one line; a
worker writes it into needs.json for the controller to stop the run, as a worker raising would only crash), and their
images prepared before the first test, as are the operator images of the releases the profile is upgraded from when
a test swaps them in.
"""
from __future__ import annotations

import json

import pytest

from rayconformance.testing.context import declared_samples

from .environment import BringUpError
from .state import Run

NEEDS_FILE = "needs.json"
# fixtures whose use by a test that will run decides what is brought up (the swap installs the releases the
# profile is upgraded from: their operator images are made ready before the first test)
NEEDED = ("cluster", "operator", "operator_release_swap")


def check_samples(names: list[str]) -> None:
    """Every declared sample exists and parses, or the run stops before bring-up, naming it in one line."""
    from rayconformance.testing import ray

    for name in names:
        try:
            ray.load_sample(name)
        except ray.SampleError as e:
            raise pytest.UsageError(f"{e} (declared by a selected test's @pytest.mark.samples)") from None


class BringUp:
    """A pytest plugin object for one conformance run (controller and workers alike)."""

    def __init__(self, run: Run):
        self.run = run

    @pytest.hookimpl(tryfirst=True)  # on an xdist worker, before the collection is sent to the controller
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.config.option.collectonly:
            return
        will_run = [i for i in session.items if not i.get_closest_marker("skip")]
        needs = {name: any(name in i.fixturenames for i in will_run) for name in NEEDED}
        needs["samples"] = sorted({s for i in will_run for s in declared_samples(i)})
        try:
            check_samples(needs["samples"])
        except pytest.UsageError as e:
            if self.run.session is not None:
                raise
            needs["problem"] = str(e)
        if self.run.session is None:  # an xdist worker: tell the controller
            run_dir = self.run.options.run_dir
            tmp = run_dir / f".{NEEDS_FILE}.{session.config.workerinput['workerid']}"
            tmp.write_text(json.dumps(needs))
            tmp.replace(run_dir / NEEDS_FILE)
        elif not session.testsfailed or session.config.option.continue_on_collection_errors:
            self.bring_up(needs)  # (with collection errors pytest stops before running anything)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """xdist (controller): workers write into the controller's run directory and take its resolved cluster."""
        from .options import WORKER_CLUSTER, WORKER_DURATIONS, WORKER_RUN_DIR, encode_cluster

        node.workerinput[WORKER_RUN_DIR] = str(self.run.options.run_dir)
        node.workerinput[WORKER_CLUSTER] = encode_cluster(self.run.options)
        node.workerinput[WORKER_DURATIONS] = self.run.options.durations_from or ""

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        """xdist (controller): runs before any test is scheduled."""
        path = self.run.options.run_dir / NEEDS_FILE
        if self.run.session is not None and path.is_file():
            needs = json.loads(path.read_text())
            if needs.get("problem"):
                raise pytest.UsageError(needs["problem"])
            self.bring_up(needs)

    def bring_up(self, needs: dict) -> None:
        if not needs.get("cluster"):
            return
        try:
            self.run.session.bring_up(need_operator=needs.get("operator", False), samples=needs.get("samples", []),
                                      earlier_operators=needs.get("operator_release_swap", False))
        except BringUpError as e:
            self.run.bring_up_failed = True
            raise pytest.UsageError(str(e)) from None
