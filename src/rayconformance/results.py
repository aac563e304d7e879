"""`python -m rayconformance results RUN`: a run summarized from what it left, its directory or its archive
(reports/<run-id>.tar.gz) as downloaded: who and what was tested, how to run it again, the result per resource and
level and each feature's verdict (tests of unsupported features counted apart, counting.py: a report counted by an
earlier statistics scheme also says what it stated), the failures with their messages, the field coverage totals, and
where the diagnostics are.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from rayconformance.report import archive, counting, release, page as report_page, summary
from rayconformance.report import field_coverage as field_show
from rayconformance.report.results import FILENAME

MESSAGE_LINES = 12  # of a failure's message; the rest is in report.html and junit.xml
UNTESTED_NAMED = 8  # claimed features a narrowed run has no test of, named


class ResultsError(ValueError):
    """A run that cannot be summarized; the message is one line."""


def load(run_dir: Path) -> dict:
    path = run_dir / FILENAME
    try:
        report = yaml.safe_load(path.read_text())
    except OSError:
        raise ResultsError(f"no report at {path}: give a run directory (reports/<run-id>) or its archive") from None
    except yaml.YAMLError as e:
        raise ResultsError(f"{path} is not valid YAML: {' '.join(str(e).split())[:200]}") from None
    keys = (counting.RESOURCES_KEY, counting.OLD_RESOURCES_KEY)  # `profiles` in the reports made before
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list) or not any(k in report for k in keys):
        raise ResultsError(f"{path} is not a conformance report (no resources and tests)")
    return report


def header(report: dict) -> list[str]:
    impl, op, cl = report.get("implementation") or {}, report.get("operator") or {}, report.get("cluster") or {}
    sel = report.get("selection") or {}
    lines = [
        f"{impl.get('project')} {impl.get('version')} ({impl.get('organization')}): operator profile "
        f"{op.get('profile')} ({op.get('claimedBy')}), image {op.get('image', 'not observed')}"
        + (f", Ray {op['rayVersion']}" if op.get("rayVersion") else ""),
        f"cluster: {cl.get('provider')} {cl.get('name')}, Kubernetes {cl.get('kubernetesVersion')}, "
        f"{cl.get('nodes')} node(s); run {report.get('runId')} of {report.get('date')}, "
        f"{round((report.get('wallSeconds') or 0) / 60)} min",
        f"suite: {report.get('suiteVersion')} ({release.describe(str(report.get('suiteVersion') or ''))})",
        "selection: " + ("everything claimed" if sel.get("full", True)
                         else f"narrowed by {', '.join(sel.get('narrowedBy') or [])}: not a certification run"),
    ]
    if report.get("shards"):
        lines.append("shards: " + ", ".join(f"{s['runId']} ({s.get('shard', '?')} on {s['provider']} {s['cluster']}, "
                                             f"{s['tests']} tests)" for s in report["shards"]))
    recorded = (report.get("reproduce") or {}).get("command")
    lines.append(f"reproduce: {recorded}" + (f" (make {report['reproduce']['make']})"
                                             if report["reproduce"].get("make") else "") if recorded
                 else "reproduce: not recorded (a report made before); `python -m rayconformance reproduce RUN` "
                      "derives it")
    return lines


def verdict_lines(report: dict) -> list[str]:
    blocks, stated = report_page.derived_resources(report), counting.resource_blocks(report)
    lines = ["", "results (tests of unsupported features counted apart, not as skips):"]
    lines += [f"  {line}" for line in summary.table({counting.RESOURCES_KEY: blocks})]
    if blocks is not stated:
        said = "; ".join(f"{p['name']} Core {p['core']['result']}, Extended {p['extended']['result']}"
                         for p in stated)
        lines.append(f"  the report itself, counted by statistics scheme {counting.scheme_of(report)} (unsupported "
                     f"tests as skips), says: {said}")
    verdicts = counting.feature_verdicts(report)
    claimed = {n: v for n, v in verdicts.items() if v["claimed"]}
    untested = sorted(set((report.get("operator") or {}).get("claimedFeatures") or []) - set(verdicts))
    lines += ["", f"claimed features ({len(claimed) + len(untested)}):"]
    for kind in ("failed", "skipped", "passed", counting.UNSUPPORTED):
        names = [n for n, v in claimed.items() if v["verdict"] == kind]
        if not names:
            continue
        if kind == "passed":
            lines.append(f"  passed ({len(names)}): {', '.join(names)}")
        else:
            lines += [f"  {kind}: {n} in {', '.join(claimed[n]['tests'].get(kind, []))}" for n in names]
    if untested:
        lines.append(f"  no test in this run ({len(untested)}): {', '.join(untested[:UNTESTED_NAMED])}"
                     + (", ..." if len(untested) > UNTESTED_NAMED else ""))
    if line := summary.unsupported_line(report):
        lines.append(line)
    return lines


def failure_lines(report: dict, run_dir: Path, shown: str) -> list[str]:
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    if not failed:
        return ["", "failures: none"]
    texts = report_page.failure_texts(run_dir / report_page.JUNIT)
    lines = ["", f"failures ({len(failed)}):"]
    for t in failed:
        note = " (the machine was overloaded)" if t.get("environment") else ""
        lines.append(f"  {t['name']} [{', '.join(t['features'])}]{note}")
        message = report_page.message_of(t, texts).splitlines() or ["(no message)"]
        lines += [f"    {m}" for m in message[:MESSAGE_LINES]]
        if len(message) > MESSAGE_LINES:
            lines.append(f"    ... {len(message) - MESSAGE_LINES} more line(s) in report.html")
        if t.get("diagnostics"):
            lines.append(f"    diagnostics: {shown}/{t['diagnostics']}/")
    return lines


def evidence_lines(report: dict, run_dir: Path, shown: str) -> list[str]:
    lines = [""] + (field_show.summary_lines(report.get(field_show.SECTION)) or ["field coverage: not measured"])
    diagnosed = sorted({t["diagnostics"] for t in report["tests"] if t.get("diagnostics")})
    on_disk = [d for d in diagnosed if (run_dir / d).is_dir()]
    lines.append(f"diagnostics: {len(diagnosed)} test(s) under {shown}/diagnostics/"
                 + (f" ({len(diagnosed) - len(on_disk)} not in this copy)" if len(on_disk) < len(diagnosed) else "")
                 if diagnosed else "diagnostics: none saved (each test's namespace is saved when it had one, unless --diagnostics failed)")
    for name in ("testbed-logs", report_page.FILENAME, report_page.JUNIT):
        if (run_dir / name).exists():
            lines.append(f"{name}: {shown}/{name}")
    return lines


def text(path: Path) -> str:
    """The summary of the run at `path` (a run directory, its report file or its archive)."""
    try:
        with archive.opened(path) as run_dir:
            report = load(run_dir)
            packed = archive.is_archive(path)
            shown = run_dir.name if packed else str(run_dir)
            where = [f"archive: {path} (its files under {shown}/: tar xzf {path})"] if packed else []
            lines = header(report) + verdict_lines(report) + failure_lines(report, run_dir, shown) + \
                evidence_lines(report, run_dir, shown) + where
    except archive.ArchiveError as e:
        raise ResultsError(str(e)) from None
    return "\n".join(lines)
