"""The clean-run count (bench/runs_ledger.py): which runs are full, and how a provider's streak counts and resets."""
from __future__ import annotations

import pytest
import yaml

from bench import runs_ledger


def run(name: str, date: str, provider: str = "local", full: bool = True, failed: tuple = ()) -> dict:
    return {"run": name, "date": date, "provider": provider, "full": full, "workers": 5, "wallSeconds": 3000,
            "profile": "kuberay-v1.7.0",
            "peakMemoryGiB": 10.0, "failed": [{"name": f, "overloaded": False, "reason": ""} for f in failed]}


def test_a_full_run_with_a_failure_resets_the_streak_and_a_selection_neither_counts_nor_resets():
    runs = [run("a", "1"), run("b", "2", failed=("x",)), run("c", "3"), run("d", "4", full=False, failed=("y",)),
            run("e", "5"), run("k", "6", provider="kind")]
    clean, failed = runs_ledger.streak(runs, "local")
    assert [r["run"] for r in clean] == ["c", "e"]
    assert failed["run"] == "b"
    assert [r["run"] for r in runs_ledger.streak(runs, "kind")[0]] == ["k"]
    lines = runs_ledger.status_lines(runs)
    assert lines[0].startswith("kind: 1 clean full run(s) in a row of 3 asked")
    assert any(line.startswith("local: 2 clean full run(s) in a row of 10 asked") for line in lines)


def write_run(tmp_path, selection: dict | None, tests: list[dict], junit: str = "") -> object:
    d = tmp_path / "r1"
    d.mkdir(parents=True)
    report = {"runId": "r1", "date": "2026-12-05T00:00:00Z", "cluster": {"provider": "local", "name": "local-gpu"},
              "operator": {"profile": "kuberay-v1.7.0"}, "scheduling": {"workers": 5}, "wallSeconds": 100.0,
              "tests": tests, **({"selection": selection} if selection else {})}
    (d / runs_ledger.REPORT).write_text(yaml.safe_dump(report))
    if junit:
        (d / "junit.xml").write_text(junit)
    return d


JUNIT = """<testsuites><testsuite><testcase name="test_b"><failure message="expected 2
 observed 1">trace</failure></testcase></testsuite></testsuites>"""


def test_recording_a_run_reads_its_report_and_junit_and_replaces_an_earlier_entry_of_the_same_run(tmp_path):
    d = write_run(tmp_path, {"full": True, "narrowedBy": []},
                  [{"name": "a", "outcome": "passed"}, {"name": "b", "outcome": "failed", "environment": "overloaded"},
                   {"name": "c", "outcome": "skipped"}], JUNIT)
    ledger = tmp_path / "ledger.json"
    runs_ledger.record(d, None, 9.5, "suite", ledger, exit_code=1)
    e = runs_ledger.record(d, None, 9.5, "suite", ledger, exit_code=1)
    assert runs_ledger.load(ledger) == [e]
    assert (e["full"], e["passed"], e["skipped"], e["workers"], e["peakMemoryGiB"]) == (True, 1, 1, 5, 9.5)
    assert e["failed"] == [{"name": "b", "overloaded": True, "reason": "expected 2 observed 1"}]


def test_the_report_says_whether_the_run_was_full_and_a_run_cut_short_is_not(tmp_path):
    passed = [{"name": "a", "outcome": "passed"}]
    assert not runs_ledger.entry(write_run(tmp_path / "1", {"full": False, "narrowedBy": ["-k"]}, passed), True,
                                 None, "cpu")["full"]
    assert runs_ledger.entry(write_run(tmp_path / "2", None, passed), True, None, "record")["full"]  # older report
    e = runs_ledger.entry(write_run(tmp_path / "3", {"full": True, "narrowedBy": []}, passed), None, None, "cpu",
                          exit_code=2)
    assert not e["full"] and e["endedEarly"] == "pytest exit 2"
    cut = [{"name": "a", "outcome": "failed", "reason": runs_ledger.INCOMPLETE}]
    e = runs_ledger.entry(write_run(tmp_path / "4", {"full": True, "narrowedBy": []}, cut), None, None, "cpu")
    assert not e["full"] and e["endedEarly"] == "a test was cut off"


def test_a_failures_cause_is_recorded_shown_and_kept_when_the_run_is_recorded_again(tmp_path):
    d = write_run(tmp_path, {"full": True, "narrowedBy": []},
                  [{"name": "a", "outcome": "failed"}, {"name": "b", "outcome": "failed"}], JUNIT)
    ledger = tmp_path / "ledger.json"
    runs_ledger.record(d, None, None, "suite", ledger, exit_code=1)
    runs_ledger.set_cause("r1", "test_b", "ray", "Ray 2.46 pins jobs to a lost head", "abc123", ledger)
    runs_ledger.record(d, None, None, "suite", ledger, exit_code=1)
    lines = runs_ledger.status_lines(runs_ledger.load(ledger))
    assert "    b: cause ray: Ray 2.46 pins jobs to a lost head (fixed in abc123)" in lines
    assert any(line.endswith("not yet root-caused (1): r1: a") for line in lines)
    with pytest.raises(SystemExit, match="not a cause"):
        runs_ledger.set_cause("r1", "a", "luck", "x", None, ledger)
    with pytest.raises(SystemExit, match="did not fail in r1"):
        runs_ledger.set_cause("r1", "c", "ours", "x", None, ledger)
