"""The clean-run count (bench/runs_ledger.py): which runs are full, and how a provider's streak counts and resets."""
from __future__ import annotations

import yaml

from bench import runs_ledger


def test_only_options_that_narrow_the_claims_make_a_selection():
    assert runs_ledger.narrowed_by([]) == []
    assert runs_ledger.narrowed_by(["--run-id", "x", "--provider", "kind", "-n", "5", "--cluster", "local-gpu"]) == []
    assert runs_ledger.narrowed_by(["-k", "provisioning"]) == ["-k"]
    assert runs_ledger.narrowed_by(["-kprovisioning", "--all-features"]) == ["-k", "--all-features"]
    assert runs_ledger.narrowed_by(["--exempt-features=RayJobSuspend"]) == ["--exempt-features"]
    assert runs_ledger.narrowed_by(["conformance/raycluster"]) == ["conformance/raycluster"]
    assert runs_ledger.narrowed_by(["conformance/"]) == []


def run(name: str, date: str, provider: str = "local", full: bool = True, failed: tuple = ()) -> dict:
    return {"run": name, "date": date, "provider": provider, "full": full, "workers": 5, "wallSeconds": 3000,
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


def test_recording_a_run_reads_its_report_and_replaces_an_earlier_entry_of_the_same_run(tmp_path):
    d = tmp_path / "r1"
    d.mkdir()
    report = {"runId": "r1", "date": "2026-12-05T00:00:00Z", "cluster": {"provider": "local", "name": "local-gpu"},
              "operator": {"profile": "kuberay-v1.7.0"}, "scheduling": {"workers": 5}, "wallSeconds": 100.0,
              "tests": [{"name": "a", "outcome": "passed"},
                        {"name": "b", "outcome": "failed", "reason": "expected 2\n observed 1",
                         "environment": "overloaded"},
                        {"name": "c", "outcome": "skipped"}]}
    (d / runs_ledger.REPORT).write_text(yaml.safe_dump(report))
    ledger = tmp_path / "ledger.json"
    runs_ledger.record(d, True, 9.5, "suite", ledger)
    e = runs_ledger.record(d, True, 9.5, "suite", ledger)
    assert runs_ledger.load(ledger) == [e]
    assert (e["passed"], e["skipped"], e["workers"], e["peakMemoryGiB"]) == (1, 1, 5, 9.5)
    assert e["failed"] == [{"name": "b", "overloaded": True, "reason": "expected 2 observed 1"}]
