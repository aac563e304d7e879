"""The field-coverage section as people read it: a line per CRD at the end of a run, a table in report.html, and the
text `python -m rayconformance field-coverage REPORT` prints for any report."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

import pytest
import yaml

from rayconformance.fieldcov.copies import SECTION_KEY as COPIES
from rayconformance.fieldcov.coverage import SECTION

from .results import FILENAME as REPORT_FILE

# the lists of a CRD's unasserted fields: (title, key in its row); those asserted through a copy are shown apart
LISTS = (("set by no test, asserted by none", "uncovered"), ("set, asserted by none", "setNotAsserted"))
THROUGH_COPY = "asserted only through a copy"


class ShowError(ValueError):
    """A report that cannot be shown (one line, for the user)."""


def totals(row: dict) -> str:
    """`RayJob: 120 fields, 40 set (34.2%), 3 asserted (2.6%), 50 asserted through a copy (42.0%), 1 excluded`
    (the copies part only when some field is)."""
    copied = (f"{row['assertedThroughCopy']} asserted through a copy ({row['assertedThroughCopyPercent']}%), "
              if row.get("assertedThroughCopy") else "")
    return (f"{row['kind']}: {row['fields']} fields, {row['set']} set ({row['setPercent']}%), "
            f"{row['asserted']} asserted ({row['assertedPercent']}%), {copied}{row['excluded']} excluded")


def unasserted(row: dict, key: str) -> list[str]:
    """A list of a row's fields no test asserted directly, without those asserted through a copy."""
    through = set(row.get("throughCopy") or ())
    return [f for f in row.get(key) or () if f not in through]


def copied_to(section: dict) -> dict[str, str]:
    """Owner field (`Kind:path`) -> the field it was copied to."""
    return {c["field"]: c["to"] for c in section.get(COPIES) or () if isinstance(c, dict)}


def summary_lines(section: dict | None) -> list[str]:
    """The lines a run ends with: one per CRD, or why there are none."""
    if not section:
        return []
    if not section.get("crdsRead"):
        return [f"field coverage: {section.get('reason')}"]
    rows = section.get("crds") or []
    lines = [f"field coverage {totals(r)}" for r in rows] or ["field coverage: no ray.io CRD on the cluster"]
    if section.get("unknownDeclarations"):
        lines.append(f"field coverage: declared fields no CRD has: {', '.join(section['unknownDeclarations'])}")
    return lines


def text(section: dict) -> str:
    """Totals per CRD, then per CRD the fields no test asserted (those some test set apart) and those asserted only
    through a copy (with the field each was copied to), then the exclusions."""
    out = [f"field coverage (operator-read keys from {section.get('operatorKeys')})"]
    if not section.get("crdsRead"):
        return "\n".join(out + [f"  {section.get('reason')}"])
    rows, to = section.get("crds") or [], copied_to(section)
    out += [f"  {totals(r)}" for r in rows] or ["  no ray.io CRD on the cluster"]
    for r in rows:
        for title, key in LISTS:
            if fields := unasserted(r, key):
                out.append(f"{r['kind']}: {title} ({len(fields)}):")
                out += [f"  {p}" for p in fields]
        if r.get("throughCopy"):
            out.append(f"{r['kind']}: {THROUGH_COPY} ({len(r['throughCopy'])}):")
            out += [f"  {p} -> {to.get(r['kind'] + ':' + p, '?')}" for p in r["throughCopy"]]
    if section.get("exclusions"):
        out.append("excluded (fields no test can cover here):")
        out += [f"  {e['field']} ({e['matched']} fields): {e['reason']}" for e in section["exclusions"]]
    if section.get("unknownDeclarations"):
        out.append("declared asserted, but no CRD has them:")
        out += [f"  {d}" for d in section["unknownDeclarations"]]
    return "\n".join(out)


def html_table(section: dict | None) -> str:
    """The section as HTML for report.html: a table of totals, each CRD's unasserted fields and those asserted only
    through a copy folded under it."""
    if not section:
        return ""
    esc = html.escape
    head = f"<h2>Field coverage</h2><p>operator-read keys from {esc(str(section.get('operatorKeys')))}</p>"
    if not section.get("crdsRead"):
        return f"{head}<p>{esc(str(section.get('reason')))}</p>"
    cells = ("CRD", "fields", "set", "asserted", "asserted through a copy", "excluded")
    rows = "".join(
        f"<tr><td>{esc(r['kind'])}</td><td>{r['fields']}</td><td>{r['set']} ({r['setPercent']}%)</td>"
        f"<td>{r['asserted']} ({r['assertedPercent']}%)</td>"
        f"<td>{r.get('assertedThroughCopy', 0)} ({r.get('assertedThroughCopyPercent', 0.0)}%)</td>"
        f"<td>{r['excluded']}</td></tr>"
        for r in section.get("crds") or [])
    table = f"<table><tr>{''.join(f'<th>{c}</th>' for c in cells)}</tr>{rows}</table>"
    to = copied_to(section)

    def folded(r: dict, title: str, items: list[str]) -> str:
        return (f"<details><summary>{esc(r['kind'])}: {len(items)} {title}</summary><ul>"
                + "".join(f"<li><code>{esc(p)}</code></li>" for p in items) + "</ul></details>") if items else ""

    def through_copy(r: dict) -> list[str]:
        return [f"{p} -> {to.get(r['kind'] + ':' + p, '?')}" for p in r.get("throughCopy") or ()]

    details = "".join("".join(folded(r, title, unasserted(r, key)) for title, key in LISTS)
                      + folded(r, THROUGH_COPY, through_copy(r)) for r in section.get("crds") or [])
    excluded = "".join(f"<li><code>{esc(e['field'])}</code> ({e['matched']}): {esc(e['reason'])}</li>"
                       for e in section.get("exclusions") or [])
    return head + table + details + (f"<p>Excluded (no test can cover them here):</p><ul>{excluded}</ul>"
                                     if excluded else "")


class HtmlSection:
    """A pytest plugin object (controller only, with pytest-html): the table under report.html's summary.
    `section()` makes the section; pytest-html writes its report before the YAML report is built."""

    def __init__(self, section: Callable[[], dict | None]):
        self.section = section

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix, summary, postfix, session) -> None:
        postfix.append(html_table(self.section()))


def load_section(path: Path) -> dict:
    """The fieldCoverage section of a report file (or of `conformance-report.yaml` in a run directory)."""
    file = path / REPORT_FILE if path.is_dir() else path
    try:
        report = yaml.safe_load(file.read_text())
    except FileNotFoundError:
        raise ShowError(f"{file}: no such report (give a conformance-report.yaml or its run directory)") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ShowError(f"{file}: not a readable YAML report ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(report, dict) or not isinstance(report.get(SECTION), dict):
        raise ShowError(f"{file}: the report has no {SECTION} section (written by a suite without the measure, "
                        "or a merged report)")
    return report[SECTION]
