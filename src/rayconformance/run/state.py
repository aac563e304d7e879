"""The state of one conformance run, and how the plugin tells a conformance run from any other pytest run.

A run is a conformance run when a path argument lies in `<rootdir>/conformance` (`pytest conformance`,
`pytest conformance/rayjob/...`), or in an xdist worker of one. Only then does `Run` exist (in
`config.stash[RUN]`); other runs only see the plugin's options and marker.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rayconformance.fieldcov.coverage import FieldRecords
from rayconformance.report.results import Results

from . import options
from .environment import Session

CONFORMANCE_DIR = "conformance"


@dataclass
class Run:
    options: options.Options
    session: Session | None = None  # only in the controller, and not for --collect-only
    results: Results | None = None
    fields: FieldRecords | None = None  # what the tests set and asserted (rayconformance.fieldcov); the controller's
    report: dict | None = None
    report_path: Path | None = None
    bring_up_failed: bool = False  # then no conformance report is written: nothing ran


RUN = pytest.StashKey[Run]()


def is_conformance_run(config: pytest.Config) -> bool:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return options.WORKER_RUN_DIR in workerinput
    root = config.rootpath / CONFORMANCE_DIR
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
        if path == root or root in path.parents:
            return True
    return False


def current(config: pytest.Config) -> Run | None:
    return config.stash.get(RUN, None)

