"""A run against a baseline: which tests regressed since an earlier report (e.g. the last release's).

Each test of the run is compared with the same test (by short name) in the baseline report:

| baseline \\ now | passed        | failed        |
|-----------------|---------------|---------------|
| passed          | still-pass    | **regressed** |
| failed          | fixed         | still-failing |
| absent/skipped  | new-pass      | new-fail      |

A test skipped now is `skipped` whatever it was. With `--fail-on regression` the run's exit status fails only on
regressions (and on errors that stop the run), so a gate can accept known failures of the last release.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .results import FILENAME

REGRESSED = "regressed"
ORDER = (REGRESSED, "new-fail", "still-failing", "fixed", "new-pass", "still-pass", "skipped")
FAIL_ON = ("any", "regression")


def load(path: str) -> tuple[str, dict[str, str]]:
    """(the baseline's run id, test name -> outcome) from a report file or a run directory; a bad path is a
    one-line UsageError."""
    p = Path(path)
    p = p / FILENAME if p.is_dir() else p
    try:
        report = yaml.safe_load(p.read_text())
        return str(report.get("runId") or p.parent.name), {t["name"]: t["outcome"] for t in report["tests"]}
    except OSError:
        raise pytest.UsageError(f"--baseline {path}: no report there; give a conformance-report.yaml or the "
                                "reports/<run-id> directory holding one") from None
    except (yaml.YAMLError, KeyError, TypeError, AttributeError):
        raise pytest.UsageError(f"--baseline {path}: not a conformance report (no tests with name and outcome)"
                                ) from None


def compare(outcome: str, before: str | None) -> str:
    if outcome == "skipped":
        return "skipped"
    if before not in ("passed", "failed"):
        return "new-pass" if outcome == "passed" else "new-fail"
    if before == "passed":
        return "still-pass" if outcome == "passed" else REGRESSED
    return "fixed" if outcome == "passed" else "still-failing"


def annotate(report: dict, base: tuple[str, str, dict]) -> None:
    """Each test of `report` gets its verdict against `base` (run id, path, name -> outcome); the report gets the
    `baseline` block."""
    for row in report["tests"]:
        row["baseline"] = compare(row["outcome"], base[2].get(row["name"]))
    report["baseline"] = block(base[0], base[1], {r["name"]: r["baseline"] for r in report["tests"]})


def block(run_id: str, path: str, verdicts: dict[str, str]) -> dict:
    """The report's `baseline` block: the baseline named, regressions first, the count of each verdict."""
    return {"runId": run_id, "path": str(path),
            "regressed": sorted(n for n, v in verdicts.items() if v == REGRESSED),
            "fixed": sorted(n for n, v in verdicts.items() if v == "fixed"),
            "counts": {v: sum(1 for x in verdicts.values() if x == v) for v in ORDER if v in verdicts.values()}}
