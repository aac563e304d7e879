"""The end of a run (controller only): the report, its page (report_page.py), with --sign-key its signature
(signing.py) and the run's archive (archive.py) are written and the environment torn down once pytest's own fixture
finalizers have used the cluster, even when Ctrl-C is pressed again while they run; then the terminal summary names
the report, every failed feature and the run's warnings, and the run's last lines are the result table per resource
and the paths of the archive and of the HTML and YAML reports (summary.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rayconformance.fieldcov import coverage as field_coverage
from rayconformance.testing.waiting import Timeouts
from rayconformance.report import archive, baseline, certify, results as report, page as report_page, signing, summary
from rayconformance.report import field_coverage as field_show

from .state import Run


class Finish:
    """A pytest plugin object for one conformance run, registered in the controller only."""

    def __init__(self, run: Run):
        self.run = run
        # what the report names as the suite that ran, taken before collection: a checkout changed during the run
        # (a commit, an edited test) must not be credited with the run
        self.suite_version = report.suite_version()
        self.suite = certify.identity(run.options.profile.path)
        self.archive_path: Path | None = None

    @pytest.hookimpl(wrapper=True, trylast=True)  # inside the terminal summary, around pytest's fixture finalizers
    def pytest_sessionfinish(self, session: pytest.Session):
        try:
            return (yield)
        except KeyboardInterrupt:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            sys.stderr.write("rayconformance: interrupted while fixtures were torn down; cleaning up the run anyway\n")
        finally:
            self.finish()
            self.apply_fail_on(session)

    def finish(self) -> None:
        run = self.run
        try:
            if not run.bring_up_failed:
                run.report = report.build(run.results, run.options, run.session.env, self.suite_version)
                run.report = field_coverage.placed(run.report, run.fields.section(run.session.env))
                if run.options.baseline:
                    baseline.annotate(run.report, run.options.baseline)
                certify.seal(run.report, run.options.profile.path, self.suite)
                run.report_path = report.write(run.options.run_dir, run.report)
                self.write_page_and_archive()
        finally:
            if not run.options.keep_resources:
                run.session.tear_down(Timeouts.scaled(run.options.timeout_scale).medium)

    def write_page_and_archive(self) -> None:
        """report.html from the report (junit.xml is written by now), with --sign-key the signature over them, then
        the run's archive; a failure to write any is a warning, the report stands."""
        run_dir, key = self.run.options.run_dir, self.run.options.sign_key
        try:
            report_page.write(run_dir, self.run.report)
            if key:
                signing.sign(run_dir, signing.load_private(key))
            self.archive_path = archive.write(run_dir)
        except (OSError, signing.SigningError) as e:
            self.run.session.warnings.append(f"could not write the run's page, signature or archive: {e}")

    def apply_fail_on(self, session: pytest.Session) -> None:
        """With --fail-on regression, failures that are not regressions do not fail the run."""
        if (self.run.options.fail_on == "regression" and self.baseline and not self.baseline["regressed"]
                and session.exitstatus == pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK

    @property
    def baseline(self) -> dict | None:
        return (self.run.report or {}).get("baseline")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Last of all, after pytest's own summary: the result table and where the reports are."""
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is None or not self.run.report:
            return
        tr.write_sep("=", "rayconformance summary")
        html = self.run.options.run_dir / report_page.FILENAME
        for line in summary.closing_lines(self.run.report, self.run.report_path, html, self.archive_path):
            tr.write_line(line)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        run, tr = self.run, terminalreporter
        tr.write_sep("-", "rayconformance")
        if self.baseline:
            b = self.baseline
            tr.write_line(f"against baseline {b['runId']}: {len(b['regressed'])} regressed"
                          + (f" ({', '.join(b['regressed'])})" if b["regressed"] else "") + "; "
                          + ", ".join(f"{n} {v}" for v, n in b["counts"].items() if v != "regressed"),
                          red=bool(b["regressed"]))
        if run.report_path:
            tr.write_line(f"conformance report: {run.report_path}")
        failed: dict[str, list[str]] = {}
        for t in run.results.tests.values():
            if t.outcome == "failed" and t.reason != report.INCOMPLETE:
                for f in t.features:
                    failed.setdefault(f, []).append(t.name)
        for f, names in sorted(failed.items()):
            why = f"claimed by {run.options.claimed_by}" if f in run.options.supported else "run by --run-test"
            tr.write_line(f"feature {f} FAILED in {', '.join(names)} ({why})", red=True)
        starved = sorted(t.name for t in run.results.tests.values() if t.outcome == "failed" and t.overloaded)
        if starved:
            tr.write_line(f"environment overloaded while these failed (the runner's, until shown otherwise): "
                          f"{', '.join(starved)}", yellow=True)
        for line in field_show.summary_lines((run.report or {}).get(field_coverage.SECTION)):
            tr.write_line(line)
        for w in run.session.warnings:
            tr.write_line(f"warning: {w}", yellow=True)
        if run.options.keep_resources and run.session.env.cluster:
            tr.write_line(f"resources kept; the cluster's kubeconfig: {run.session.env.cluster.kubeconfig}")
