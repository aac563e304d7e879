"""The break ledger (bench/breaks_ledger.py) and the batch chooser (bench/breaks.py): what counts as verified, what
changes a case's digest, and that a break run records each case as it ends."""
from __future__ import annotations

import json
import textwrap

from bench import breaks, breaks_ledger
from rayconformance.features import matches
from tests.breaks import harness
from tests.breaks.harness import Case
from tests.breaks.test_breaks import CASES


def entry(verdict: str, digest: str = "d1", seconds: int = 100) -> dict:
    return {"digest": digest, "verdict": verdict, "commit": "abc", "date": "2026-12-05T00:00:00Z",
            "seconds": seconds, "message": ""}


def test_a_case_is_verified_only_when_it_failed_as_required_on_the_same_inputs():
    assert breaks_ledger.state(None, "d1") == "never-run"
    assert breaks_ledger.state(entry("fails"), "d1") == "verified"
    assert breaks_ledger.state(entry("fails"), "d2") == "stale"
    assert breaks_ledger.state(entry("did-not-fail"), "d1") == "did-not-fail"
    assert breaks_ledger.state(entry("skipped"), "d1") == "skipped"


def test_the_break_cases_pytest_outcome_says_whether_the_conformance_test_failed():
    assert breaks_ledger.verdict("passed", "call") == "fails"
    assert breaks_ledger.verdict("failed", "call", "expected x to FAIL (not pass, not error); junit: ...") == "did-not-fail"
    assert breaks_ledger.verdict("failed", "call", "the failure message should mention 'y'") == "wrong-message"
    assert breaks_ledger.verdict("failed", "call", "patch does not apply") == "error"
    assert breaks_ledger.verdict("failed", "setup") == "error"
    assert breaks_ledger.verdict("skipped", "call") == "skipped"


def test_the_digest_follows_the_case_its_callables_and_its_patch():
    base = next(c for c in CASES if c.patch)
    same = Case(**{**base.__dict__})
    assert breaks_ledger.digest(same) == breaks_ledger.digest(base)
    assert breaks_ledger.digest(Case(**{**base.__dict__, "expect": base.expect + "x"})) != breaks_ledger.digest(base)
    other_patch = next(c.patch for c in CASES if c.patch and c.patch != base.patch)
    assert breaks_ledger.digest(Case(**{**base.__dict__, "patch": other_patch})) != breaks_ledger.digest(base)
    with_saboteur = next(c for c in CASES if c.saboteur)
    other = next(c.saboteur for c in CASES if c.saboteur and breaks_ledger._source(c.saboteur)
                 != breaks_ledger._source(with_saboteur.saboteur))
    assert breaks_ledger.digest(Case(**{**with_saboteur.__dict__, "saboteur": other})) != \
        breaks_ledger.digest(with_saboteur)
    assert len({breaks_ledger.digest(c) for c in CASES}) == len(CASES), "two cases share a digest"


def test_every_case_breaks_a_test_that_exists():
    missing = sorted({c.test for c in CASES if breaks_ledger.test_module(c.test) is None})
    assert not missing, f"break cases name conformance tests that no module defines: {missing}"


def test_the_batch_takes_what_never_ran_first_and_fits_the_budget():
    rows = [("verified", "t[a]", "d", entry("fails"), None),
            ("stale", "t[b]", "d", entry("fails", seconds=600), None),
            ("never-run", "t[c]", "d", None, None),
            ("did-not-fail", "t[d]", "d", entry("did-not-fail", seconds=200), None)]
    assert [n for n, _ in breaks.choose(rows, minutes=10)] == ["t[c]"]  # 300 s; b's 600 s does not fit, d waits
    assert [n for n, _ in breaks.choose(rows, minutes=15)] == ["t[c]", "t[b]"]
    assert [n for n, _ in breaks.choose(rows, minutes=100)] == ["t[c]", "t[b]", "t[d]"]
    assert [n for n, _ in breaks.choose(rows[:2], minutes=1)] == ["t[b]"]  # at least one, even over the budget


def test_cases_sharing_an_install_are_taken_side_by_side_and_cost_less():
    rows = [("never-run", "t[a]", "d", None, ("p", 1)),
            ("never-run", "t[b]", "d", None, None),
            ("did-not-fail", "t[c]", "d", entry("did-not-fail", seconds=200), ("p", 1)),
            ("never-run", "t[d]", "d", None, ("p", 1))]
    assert breaks.guess(rows) == 200  # a case that never ran: as long as those that ran, on average
    order = [(r[1], cost) for r, cost in breaks.costed(rows, breaks.guess(rows))]
    assert order == [("t[a]", 200), ("t[d]", 200 - breaks.SHARED_SECONDS), ("t[c]", 200), ("t[b]", 200)]
    assert [n for n, _ in breaks.choose(rows, minutes=6)] == ["t[a]", "t[d]"]  # 200 + 140 s


def test_cases_with_one_operator_break_share_an_install_key():
    swapped = [c for c in CASES if c.patch == "rayjob-failure-reasons-swapped"]
    assert len(swapped) > 1 and len({c.install_key for c in swapped}) == 1
    assert all(c.install_key is None for c in CASES if c.saboteur or (c.samples and c.local))


def test_a_case_mutating_a_sample_shares_a_session_only_with_tests_that_do_not_apply_it():
    def mutate(docs):
        pass
    a = Case("uses_basic", "x", samples={"basic": mutate})
    b = Case("uses_basic_too", "x")
    c = Case("uses_other[one]", "x", samples={"other": mutate})
    d = Case("uses_third", "x", samples={"basic": mutate})
    declared = {"uses_basic": ("basic",), "uses_basic_too": ("basic",), "uses_other[one]": ("other",),
                "uses_third": ("third",)}
    keys = harness.session_keys([a, b, c, d], declared)
    assert keys["uses_basic"] == keys["uses_other[one]"] != keys["uses_basic_too"]  # b applies what a mutates
    assert keys["uses_third"] not in (keys["uses_basic"], keys["uses_basic_too"])  # d mutates what a and b use
    assert len({keys[k] for k in keys}) == 3 and all(k[:-1] == a.install_key for k in keys.values())
    unknown = harness.session_keys([a, b, c], None)  # no declarations: a mutation runs alone
    assert unknown["uses_basic"] is None and unknown["uses_other[one]"] is None and unknown["uses_basic_too"]


def test_every_break_case_names_a_conformance_test_that_declares_its_mutated_samples():
    declared = harness.declared_samples()
    assert declared, "the collect-only pass over conformance/ gave nothing"
    for case in CASES:
        names = [short for short in declared if matches(case.test, short)]
        assert names, f"{case.id}: no conformance test is named {case.test!r}"
        assert all(set(case.samples) <= set(declared[n]) for n in names), \
            f"{case.id} mutates {sorted(case.samples)}, but {case.test} declares {declared[names[0]]}"


def test_a_break_run_records_each_case_as_it_ends(pytester, tmp_path, monkeypatch):
    pytester.makepyfile(test_fake=textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("case", ["seen", "unseen", "noskip"])
        def test_conformance_test_fails_when_behavior_is_broken(case):
            if case == "unseen":
                assert False, "expected the test to FAIL (not pass, not error)"
            if case == "noskip":
                pytest.skip("no tree")
    """))
    ids = [f"test_fake.py::test_conformance_test_fails_when_behavior_is_broken[{c}]" for c in ("seen", "unseen", "noskip")]
    digests = tmp_path / "digests.json"
    digests.write_text(json.dumps({i: f"d-{n}" for n, i in enumerate(ids)}))
    ledger = tmp_path / "ledger.json"
    monkeypatch.setenv(breaks_ledger.DIGESTS_ENV, str(digests))
    monkeypatch.setenv(breaks_ledger.LEDGER_ENV, str(ledger))
    pytester.runpytest_inprocess("-p", "bench.breaks_ledger")
    got = json.loads(ledger.read_text())
    assert {k: (v["verdict"], v["digest"]) for k, v in got.items()} == {
        "seen": ("fails", "d-0"), "unseen": ("did-not-fail", "d-1"), "noskip": ("skipped", "d-2")}
    assert "expected the test to FAIL" in got["unseen"]["message"]
    assert got["noskip"]["message"] == "Skipped: no tree"


def test_every_break_case_has_an_id_of_its_own():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
