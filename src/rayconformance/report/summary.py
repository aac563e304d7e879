"""The lines a conformance run ends with: its result per resource and level as a table (tests of unsupported features
counted apart: counting.py), the features not claimed, and where its reports and archive are."""
from __future__ import annotations

from pathlib import Path

from . import counting
from .results import INCOMPLETE

HEADER = ("resource", "Core", "Extended")


def cell(status: dict) -> str:
    """`partial (8 passed, 3 skipped)` from a resource level's status block."""
    counts = ", ".join(f"{n} {outcome}" for outcome, n in status["statistics"].items() if n)
    return f"{status['result']} ({counts or 'no tests'})"


def table(report: dict) -> list[str]:
    """One row per resource, columns aligned; the header first."""
    rows = [HEADER] + [(p["name"], cell(p["core"]), cell(p["extended"])) for p in counting.resource_blocks(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def unsupported_line(report: dict) -> str | None:
    """The features whose tests were not run because they are not claimed, with their test counts."""
    counts = {f: len(v["tests"][counting.UNSUPPORTED]) for f, v in counting.feature_verdicts(report).items()
              if not v["claimed"] and counting.UNSUPPORTED in v["tests"]}
    if not counts:
        return None
    return (f"not claimed, so not run (unsupported, no skip of the verdict): {sum(counts.values())} test(s) of "
            + ", ".join(f"{f} ({n})" for f, n in counts.items()))


def closing_lines(report: dict, report_path: Path | None, html_path: Path | None,
                  archive_path: Path | None = None) -> list[str]:
    """The table, the features not claimed, the regressions against a baseline if any, then the paths of the
    archive and of the HTML and YAML reports."""
    lines = table(report)
    if line := unsupported_line(report):
        lines.append(line)
    stopped = [t["name"] for t in report.get("tests") or () if t.get("reason") == INCOMPLETE]
    if stopped:
        lines.append(f"interrupted: {len(stopped)} test(s) stopped before they finished (failed, not the operator's "
                     f"verdict): {', '.join(stopped)}")
    regressed = (report.get("baseline") or {}).get("regressed")
    if regressed:
        lines.append(f"regressed against baseline {report['baseline'].get('runId')}: {', '.join(regressed)}")
    if archive_path and archive_path.is_file():
        lines.append(f"results archive: {archive_path}")
    if html_path and html_path.is_file():
        lines.append(f"HTML report: {html_path}")
    if report_path:
        lines.append(f"conformance report: {report_path}")
    return lines
