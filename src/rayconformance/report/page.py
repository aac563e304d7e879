"""report.html: the page of a conformance report, one page for a single run and a merged one alike (finish.py and
merge.py both write it), rendered from `conformance-report.yaml` and each failure's text in `junit.xml` beside it.

The page says who and what was tested (implementation, operator, cluster, suite, selection, shards), the result per
resource and level counted as counting.py does (tests of unsupported features apart from skips; a report counted by
an earlier statistics scheme says what it stated), each feature's verdict, the failures with their messages,
tracebacks and diagnostics, every test with its behavior and traffic plot, the field coverage, and how to reproduce
the run (its command).
"""
from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from pathlib import Path

from rayconformance import features

from . import counting, traffic_plot
from . import field_coverage as field_show
from .results import Record

FILENAME = "report.html"
JUNIT = "junit.xml"
VERDICT_ORDER = ("failed", "skipped", "passed", counting.UNSUPPORTED)
STYLE = """body{font-family:sans-serif;font-size:14px;margin:1em 2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}.failed,.failure{background:#fdd}.skipped,.partial{background:#fff3c4}
.passed,.success{background:#dfd}.unsupported,.untested{color:#777}pre{white-space:pre-wrap;margin:.3em 0}
details{margin:.4em 0}summary{cursor:pointer;font-weight:bold}.facts th{width:12em}"""


def esc(value) -> str:
    return html.escape("" if value is None else str(value))


def nodeid_of(classname: str, name: str) -> str:
    """junit.xml's classname and name of a test function back as its node id (`conformance/x/test_a.py::test_b`)."""
    return f"{classname.replace('.', '/')}.py::{name}"


def failure_texts(junit: Path | None) -> dict[str, tuple[str, str]]:
    """Each failed test's (message, text) in junit.xml (its exception's message, and its traceback), by node id; {}
    without a readable file."""
    try:
        root = ET.parse(junit).getroot() if junit else None
    except (OSError, ET.ParseError):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for case in root.iter("testcase") if root is not None else ():
        for kind in ("failure", "error"):
            for el in case.findall(kind):
                key = nodeid_of(case.get("classname", ""), case.get("name", ""))
                message, text = el.get("message") or "", (el.text or "").strip()
                if key in out:
                    message, text = out[key][0] or message, f"{out[key][1]}\n\n{text}"
                out[key] = (message, text)
    return out


def message_of(test: dict, texts: dict[str, tuple[str, str]]) -> str:
    """A failed test's message: the report's, else junit.xml's (reports before `message`), else its reason."""
    return test.get("message") or texts.get(test["nodeid"], ("", ""))[0] or test.get("reason") or ""


def records(report: dict) -> list[Record]:
    return [Record(t["nodeid"], t["name"], t["features"], outcome=t["outcome"]) for t in report.get("tests") or []]


def derived_resources(report: dict) -> list[dict]:
    """The resource blocks as this suite counts them (counting.SCHEME): the report's own (counting.resource_blocks)
    when it was counted so, or when it names a feature this suite's list no longer has (it cannot be sorted into
    resources here)."""
    known = all(f in features.BY_NAME for t in report.get("tests") or [] for f in t["features"])
    if counting.scheme_of(report) == counting.SCHEME or not known:
        return counting.resource_blocks(report)
    claimed = set((report.get("operator") or {}).get("claimedFeatures") or [])
    return counting.resource_reports(records(report), claimed, features)


def facts(report: dict) -> str:
    impl, op, cl = report.get("implementation") or {}, report.get("operator") or {}, report.get("cluster") or {}
    cert, sel = report.get("certification") or {}, report.get("selection") or {}
    rows = [
        ("implementation",
         f"{impl.get('organization')}/{impl.get('project')} {impl.get('version')} ({impl.get('url')})"),
        ("operator", f"profile {op.get('profile')} ({op.get('claimedBy')}), image {op.get('image', 'not observed')}, "
                     f"{len(op.get('claimedFeatures') or [])} features claimed"
                     + (f", Ray {op['rayVersion']}" if op.get("rayVersion") else "")),
        ("cluster", f"{cl.get('provider')} {cl.get('name')}, Kubernetes {cl.get('kubernetesVersion')}, "
                    f"{cl.get('nodes')} node(s), GPU {cl.get('gpu')}"),
        ("suite", f"{report.get('suiteVersion')} (digest scheme {cert.get('digestScheme', 1)}, statistics scheme "
                  f"{counting.scheme_of(report)})"),
        ("run", f"{report.get('runId')}, mode {report.get('mode')}, {report.get('date')}, "
                f"{round((report.get('wallSeconds') or 0) / 60)} min"),
        ("selection", "everything claimed" if sel.get("full", True)
         else f"narrowed by {', '.join(sel.get('narrowedBy') or [])}"),
    ]
    if report.get("shards"):
        rows.append(("shards", ", ".join(f"{s['runId']} ({s.get('shard', '?')} on {s['cluster']}, {s['tests']} tests)"
                                         for s in report["shards"])))
    if report.get("baseline"):
        b = report["baseline"]
        rows.append(("baseline", f"{b['runId']}: regressed {', '.join(b['regressed']) or 'none'}"))
    return "<table class='facts'>" + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows) + \
        "</table>"


def reproduce(report: dict) -> str:
    """The Reproduce section: the run's command and what decides what ran (run/recipe.py), and the command that
    runs it again."""
    section = report.get("reproduce")
    again = f"python -m rayconformance reproduce reports/{report.get('runId')}"
    if not section:
        return (f"<h2>Reproduce</h2><p>Not recorded: the report was made before runs recorded it. <code>{esc(again)}"
                "</code> derives the command from the report (profile, cluster, Ray version, selection).</p>")
    rows = [(k, section[k]) for k in ("command", "make", "suiteVersion", "suiteCommit", "operatorProfile",
                                      "operatorTree", "operatorTreeCommit", "provider", "cluster", "rayVersion",
                                      "workers", "timeoutScale", "mode", "shardsMerged") if section.get(k) is not None]
    rows += [(f"selection: {k}", ", ".join(v) if isinstance(v, list) else v)
             for k, v in (section.get("selection") or {}).items()]
    return ("<h2>Reproduce</h2><table class='facts'>" + "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code>"
                                                               "</td></tr>" for k, v in rows)
            + f"</table><p>Run it again with this suite and compare the verdicts: <code>{esc(again)}</code></p>")


def cell(st: dict) -> str:
    counts = ", ".join(f"{n} {k}" for k, n in st["statistics"].items() if n) or "no tests"
    return f"<td class='{esc(st['result'])}'><b>{esc(st['result'])}</b> ({esc(counts)})</td>"


def results(report: dict) -> str:
    blocks, stated = derived_resources(report), counting.resource_blocks(report)
    rows = "".join(f"<tr><th>{esc(p['name'])}</th>{cell(p['core'])}{cell(p['extended'])}<td>{esc(p['summary'])}"
                   "</td></tr>" for p in blocks)
    note = ""
    if blocks is not stated:
        said = " ".join(f"{p['name']}: {p['summary']}" for p in stated)
        note = (f"<p>Counted as this suite counts (tests of unsupported features apart). The report itself was "
                f"counted by statistics scheme {counting.scheme_of(report)}, unsupported tests as skips: "
                f"{esc(said)}</p>")
    return ("<h2>Results</h2><table><tr><th>resource</th><th>Core</th><th>Extended</th><th>summary</th></tr>"
            f"{rows}</table>{note}")


def feature_table(report: dict) -> str:
    verdicts = counting.feature_verdicts(report)

    def row(name: str, v: dict) -> str:
        f = features.BY_NAME.get(name)
        tests = "; ".join(f"{k}: {', '.join(names)}" for k, names in v["tests"].items())
        return (f"<tr class='{esc(v['verdict'])}'><td>{esc(name)}</td><td>{esc(f.resource if f else '')} "
                f"{esc(f.level if f else '')}</td><td>{esc(v['verdict'])}</td><td>{esc(tests)}</td></tr>")

    head = "<tr><th>feature</th><th>resource, level</th><th>verdict</th><th>tests</th></tr>"
    claimed = "".join(row(n, v) for n, v in verdicts.items() if v["claimed"])
    other = "".join(row(n, v) for n, v in verdicts.items() if not v["claimed"])
    out = f"<h2>Features</h2><table>{head}{claimed}</table>"
    untested = sorted(set((report.get("operator") or {}).get("claimedFeatures") or []) - set(verdicts))
    if untested:
        out += f"<p>{len(untested)} claimed feature(s) with no test in this run: {esc(', '.join(untested))}</p>"
    if other:
        n = sum(1 for v in verdicts.values() if not v["claimed"])
        out += (f"<details><summary>{n} feature(s) not claimed: their tests are unsupported, not skips</summary>"
                f"<table>{head}{other}</table></details>")
    return out


def failures(report: dict, texts: dict[str, tuple[str, str]]) -> str:
    failed = [t for t in report.get("tests") or [] if t["outcome"] == "failed"]
    if not failed:
        return ""
    items = []
    for t in failed:
        message = message_of(t, texts)
        link = f" <a href='{esc(t['diagnostics'])}/'>diagnostics</a>" if t.get("diagnostics") else ""
        overloaded = " (the machine was overloaded)" if t.get("environment") else ""
        trace = (f"<details><summary>traceback</summary><pre>{esc(texts[t['nodeid']][1])}</pre></details>"
                 if texts.get(t["nodeid"], ("", ""))[1] else "")
        items.append(f"<li><b>{esc(t['name'])}</b> [{esc(', '.join(t['features']))}]{overloaded}{link}"
                     f"<pre>{esc(message)}</pre>{trace}</li>")
    return f"<h2>Failures</h2><ul>{''.join(items)}</ul>"


def test_rows(tests: list[dict]) -> str:
    out = []
    for t in tests:
        note = t.get("message") or t.get("reason") or ""
        link = f"<a href='{esc(t['diagnostics'])}/'>diagnostics</a>" if t.get("diagnostics") else ""
        out.append(f"<tr><td>{esc(t['name'])}</td><td>{esc(', '.join(t['features']))}</td>"
                   f"<td>{t.get('durationSeconds', 0):.0f}</td><td>{esc(t.get('description', ''))}</td>"
                   f"<td>{esc(note)} {link}</td></tr>")
        svg = traffic_plot.plot(t.get("measurements") or {})
        if svg:
            out.append(f"<tr><td colspan='5'>{svg}</td></tr>")
    return "".join(out)


def tests_section(report: dict) -> str:
    claimed = set((report.get("operator") or {}).get("claimedFeatures") or [])
    groups: dict[str, list[dict]] = {v: [] for v in VERDICT_ORDER}
    for t in report.get("tests") or []:
        groups[counting.verdict(t, claimed)].append(t)
    head = "<tr><th>test</th><th>features</th><th>s</th><th>behavior</th><th>note</th></tr>"
    parts = [f"<details{' open' if v == 'failed' else ''}><summary class='{v}'>{len(ts)} {v}</summary>"
             f"<table>{head}{test_rows(ts)}</table></details>" for v, ts in groups.items() if ts]
    return "<h2>Tests</h2>" + "".join(parts)


def render(report: dict, junit: Path | None = None) -> str:
    """The page of `report`; `junit` is the run's junit.xml (the failures' tracebacks), if there is one."""
    impl = report.get("implementation") or {}
    title = f"{impl.get('project', '')} {impl.get('version', '')}: rayconformance report"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title><style>{STYLE}</style>"
            f"</head><body><h1>{esc(title)}</h1>{facts(report)}{results(report)}{feature_table(report)}"
            f"{failures(report, failure_texts(junit))}{tests_section(report)}"
            f"{field_show.html_table(report.get(field_show.SECTION))}{reproduce(report)}</body></html>\n")


def write(run_dir: Path, report: dict) -> Path:
    """Write `run_dir`/report.html for `report`, reading the failures' texts from `run_dir`/junit.xml."""
    path = run_dir / FILENAME
    path.write_text(render(report, run_dir / JUNIT))
    return path
