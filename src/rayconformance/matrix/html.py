"""The matrix report (report.py's dict) as one self-contained HTML page: runs, contradictions of the profiles'
claims, feature verdicts per column, where the columns differ, and each test's outcome per column."""
from __future__ import annotations

import html

from . import NOT_RUN, UNSUPPORTED

COLOURS = {"passed": "#c8e6c9", "failed": "#ffcdd2", "error": "#ffcdd2", "skipped": "#fff9c4",
           UNSUPPORTED: "#e0e0e0", NOT_RUN: "#ffffff"}
STYLE = ("body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:1.5em}"
         "td,th{border:1px solid #999;padding:3px 6px;font-size:13px}th{background:#eee}")
e = html.escape


def cell(verdict: str, title: str = "", mark: str = "") -> str:
    return f'<td style="background:{COLOURS.get(verdict, "#fff")}" title="{e(title)}">{e(verdict)}{mark}</td>'


def runs_table(report: dict) -> list[str]:
    out = ["<h2>Runs</h2><table><tr><th>column</th><th>operator</th><th>Ray</th><th>run</th><th>seconds</th>"
           "<th>result</th></tr>"]
    for c in report["columns"]:
        out.append(f"<tr><td>{e(c['column'])}</td><td>{e(str(c.get('operatorVersion')))}</td><td>{e(c['rayVersion'])}"
                   f"</td><td>{e(str(c.get('runId')))}</td><td>{e(str(c.get('wallSeconds')))}</td>"
                   f"<td>{e(c['summary'])}</td></tr>")
    out.append("</table>")
    out += [f"<p>{e(line)}</p>" for line in report.get("notRun", [])]
    return out


def contradictions(report: dict) -> list[str]:
    out = ["<h2>Contradictions of the profiles' claims</h2>"]
    if not report["contradictions"]:
        return out + ["<p>none: every claimed feature that ran passed.</p>"]
    return out + ["<ul>" + "".join(
        f"<li><b>{e(x['column'])}</b>: {e(x['feature'])} is {'claimed' if x['claimed'] else 'not claimed'} "
        f"but {e(x['verdict'])} ({e(', '.join(x['tests']) or x.get('error') or '')})</li>"
        for x in report["contradictions"]) + "</ul>"]


def render_html(report: dict) -> str:
    cols = [c["column"] for c in report["columns"]]
    head = "<tr><th></th>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr>"
    title = f"Conformance matrix {e(report['matrixId'])}"
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{STYLE}</style></head>"
           f"<body><h1>{title}</h1><p>{e(report['date'])}</p>", *runs_table(report), *contradictions(report)]
    out.append("<h2>Features</h2><p>* = claimed by the column's profile</p><table>" + head)
    for f in report["features"]:
        out.append(f"<tr><th style='text-align:left'>{e(f['name'])} <small>({e(f['level'])})</small></th>" + "".join(
            cell(f["results"][c]["verdict"], mark="*" if f["results"][c]["claimed"] else "") for c in cols) + "</tr>")
    out.append("</table><h2>Where the columns differ</h2>")
    out.append("<ul>" + "".join(f"<li>{e(d['feature'])}: " + ", ".join(f"{e(c)} {e(v)}" for c, v in d["verdicts"].items())
                                + "</li>" for d in report["differences"]) + "</ul>" if report["differences"] else "<p>none</p>")
    out.append("<h2>Tests</h2><table>" + head)
    for t in report["tests"]:
        out.append(f"<tr><th style='text-align:left' title='{e(', '.join(t['features']))}'>{e(t['name'])}</th>" + "".join(
            cell(t["outcomes"][c], (t.get("reasons") or {}).get(c, "")) for c in cols) + "</tr>")
    out.append("</table></body></html>")
    return "\n".join(out)
