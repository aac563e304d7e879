"""The rayconformance pytest plugin (the `pytest11` entry point). It only wires; each job has its module:

- run/options.py: the options and their validation   - run/state.py: what a conformance run is, and its state
- run/selection.py: the feature marker, selection      - run/bringup.py: the environment, once, when needed
- report/failures.py: phases, diagnostics, HTML links  - run/finish.py: report, page, archive, summary
- fixtures/session_fixtures.py, fixtures/pertest.py: the fixtures; report/results.py: the tests' results, the report
- run/serial.py: tests that must run alone under xdist - run/signals.py: SIGTERM and SIGHUP stop a run as Ctrl-C
- run/pressure.py: whether the machine was starved while a test ran (run/foreign.py: which processes are not ours)
- run/stopped_workers.py: a stopped run still reads the reports its xdist workers send while they stop
- run/progress.py: on a terminal, each finished test with the time left (bring-up's steps: clusters/progress.py)
- run/workers.py: how many workers (`-n auto`)
- fieldcov/: which fields of the ray.io CRDs the tests set and assert (the `covers` marker)

In runs that are not conformance runs (e.g. the project's own tests) only the options, the hooks and the
`feature` marker exist. Import-light: the Kubernetes client is imported when a fixture first needs it.
"""
from __future__ import annotations

import pytest

from rayconformance.fieldcov import coverage as field_coverage
from rayconformance.fieldcov import record as field_record
from rayconformance.testing.context import MARKER_HELP as SAMPLES_MARKER_HELP
from rayconformance.report import field_coverage as field_show
from rayconformance.report.failures import Failures
from rayconformance.report.results import HtmlColumns, Results
from rayconformance.run import foreign, options, recipe, signals, workers
from rayconformance.run.bringup import BringUp
from rayconformance.run.environment import Session
from rayconformance.run.finish import Finish
from rayconformance.run.pressure import Pressure, Thresholds
from rayconformance.run.progress import Progress, load_history
from rayconformance.run.selection import Selection, narrowed_by
from rayconformance.run.serial import LANE_HELP, MARKER_HELP, Serial, alone_lanes
from rayconformance.run.state import RUN, Run, is_conformance_run
from rayconformance.run.stopped_workers import StoppedWorkers

from . import hooks

pytest_plugins = ["rayconformance.fixtures.session_fixtures", "rayconformance.fixtures.pertest"]


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_addhooks(pluginmanager) -> None:
    pluginmanager.add_hookspecs(hooks)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` in a conformance run: the workers the machine carries (src/rayconformance/run/workers.py)."""
    if not is_conformance_run(config):
        return None
    config.stash[workers.CHOICE] = choice = workers.choose(config)
    return choice.workers


@pytest.hookimpl(tryfirst=True)  # before pytest-html and junitxml read their output paths
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "feature(*names): the conformance features the test exercises "
                                       "(src/rayconformance/features/); tests of unsupported features are skipped")
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", LANE_HELP)
    config.addinivalue_line("markers", SAMPLES_MARKER_HELP)
    config.addinivalue_line("markers", field_record.MARKER_HELP)
    if not is_conformance_run(config):
        return
    run = config.stash[RUN] = Run(options.load(config))
    if not config.option.collectonly:
        signals.install(forward_to_workers=not hasattr(config, "workerinput"))
    plugins = {"selection": Selection(run)}
    if not config.option.collectonly:
        plugins |= {"bringup": BringUp(run), "failures": Failures(), "serial": Serial(run.options.run_dir),
                    "pressure": Pressure(Thresholds(run.options.overload_threshold,
                                                    run.options.foreign_load_threshold)),
                    "field-recorder": field_record.Recorder()}
        if not hasattr(config, "workerinput"):  # the controller
            foreign.mark_run(run.options.run_id)
            _set_output_paths(config, run)
            history = load_history(run.options)
            run.session, run.results = Session(run.options, history.steps), Results()
            run.fields = field_coverage.FieldRecords()
            workers.one_at_a_time(config)
            choice = config.stash.get(workers.CHOICE, None) or workers.given(config.getoption("numprocesses", None))
            config.stash[workers.CHOICE] = choice
            run.results.scheduling = {**choice.to_report(run.options.order),
                                      "lanesAlone": alone_lanes(workers.machine()[0])}
            run.results.narrowed_by = narrowed_by(config, run.options)
            run.results.reproduce = recipe.section(config, run.options)
            plugins |= {"results": run.results, "finish": Finish(run), "progress": Progress(config, history),
                        "stopped-workers": StoppedWorkers(), "field-coverage": run.fields}
            if config.pluginmanager.hasplugin("html"):
                plugins["html"] = HtmlColumns()
                plugins["field-coverage-html"] = field_show.HtmlSection(lambda: run.fields.section(run.session.env))
    for name, plugin in plugins.items():
        config.pluginmanager.register(plugin, f"rayconformance-{name}")


def _set_output_paths(config: pytest.Config, run: Run) -> None:
    run_dir = run.options.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    # report.html is the suite's own page (report_page.py, written at the end); pytest-html's only with --html PATH
    if hasattr(config.option, "xmlpath") and not config.option.xmlpath:
        config.option.xmlpath = str(run_dir / "junit.xml")


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    run = config.stash.get(RUN, None)
    if run is None:
        return None
    o = run.options
    from rayconformance import features

    why = f" ({o.provider_reason})" if o.provider_reason else ""
    choice = config.stash.get(workers.CHOICE, None)
    scheduling = [f"rayconformance: {choice.reason}; tests {o.order}"] if choice else []
    return [f"rayconformance: provider {o.provider}{why}, cluster {o.cluster_name}, operator profile {o.profile.name}, "
            f"{len(o.supported)}/{len(features.NAMES)} features supported ({o.claimed_by}), run dir {o.run_dir}",
            *scheduling]
