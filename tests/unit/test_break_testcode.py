"""A break case's digest sums up its test's own code (bench/breaks_testcode.py, digest scheme 2), and the ledger's
scheme-1 entries are re-keyed only where the inputs they were verified on can be rebuilt from their commit
(bench/breaks_rekey.py)."""
from __future__ import annotations

import json
import subprocess
import textwrap

from bench import breaks_ledger, breaks_rekey
from bench.breaks_testcode import test_code as code_of
from tests.breaks.harness import Case

MODULE = textwrap.dedent('''
    """A module."""
    import pytest

    from rayconformance.testing.axes import OWNERS

    LIMIT = 3  # the most workers


    def helper(n):
        return min(n, LIMIT)


    @pytest.mark.parametrize("owner", OWNERS)
    def test_thing(ctx, owner):
        """Things happen."""
        assert helper(ctx.n) == 3, "run 'probe'"


    def test_other(ctx):
        assert ctx
''')


def test_the_tests_code_is_its_function_and_what_it_uses_of_its_module():
    code = code_of("thing[user]", MODULE)
    assert "def test_thing" in code and "LIMIT = 3" in code and "def helper" in code
    assert "test_other" not in code and "OWNERS = <imported OWNERS>" in code
    unchanged = [MODULE.replace('"""A module."""', '"""Another docstring."""'),
                 MODULE.replace("  # the most workers", ""),
                 MODULE.replace("from rayconformance.testing.axes import OWNERS", "from testing.axes import OWNERS"),
                 MODULE.replace("assert ctx\n", "assert ctx.other\n")]
    for text in unchanged:
        assert code_of("thing", text) == code, text
    changed = [MODULE.replace("LIMIT = 3", "LIMIT = 4"), MODULE.replace("min(n", "max(n"),
               MODULE.replace("== 3,", "== 2,"), MODULE.replace('"owner", OWNERS', '"owner", OWNERS[:1]'),
               MODULE + "\npytestmark = pytest.mark.feature('X')\n"]
    for text in changed:
        assert code_of("thing", text) != code, text
    assert code_of("missing", MODULE) is None and code_of("thing", "def (") is None


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_scheme_1_entry_is_rekeyed_only_from_inputs_rebuilt_at_its_commit(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "conformance").mkdir(parents=True)
    (repo / "samples" / "programs").mkdir(parents=True)
    (repo / "tests" / "breaks" / "patches").mkdir(parents=True)
    (repo / "conformance" / "test_m.py").write_text(MODULE)
    (repo / "samples" / "programs" / "probe.py").write_text("print('probe')\n")
    (repo / "tests" / "breaks" / "patches" / "p.patch").write_text("--- a\n+++ b\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    monkeypatch.setattr(breaks_ledger, "ROOT", repo)
    monkeypatch.setattr(breaks_ledger, "PROGRAMS", repo / "samples" / "programs")
    monkeypatch.setattr(breaks_ledger, "test_module",
                        lambda test, conformance=None: repo / "conformance" / "test_m.py")
    case, other = Case("thing[user]", "x", patch="p"), Case("thing[ray]", "x", patch="p")
    old = breaks_ledger.digest_of(breaks_ledger.inputs(case, scheme=1))
    assert "programs" in breaks_ledger.inputs(case)  # its code names the program 'probe'

    def entry(digest, at=commit):
        return {"digest": digest, "verdict": "fails", "commit": at, "date": "d", "seconds": 1, "message": ""}

    # another test of the module changes: scheme 1 calls the case stale, the re-keyed entry is verified
    (repo / "conformance" / "test_m.py").write_text(MODULE.replace("assert ctx\n", "assert ctx.other\n"))
    ledger = {case.id: entry(old), other.id: entry("not-what-it-ran-on"), "gone": entry(old)}
    assert breaks_ledger.digest_of(breaks_ledger.inputs(case, scheme=1)) != old
    counts = breaks_rekey.rekey(ledger, [case, other])
    assert counts == {"rekeyed, verified": 1, "rekeyed, test changed": 0, "not rebuildable": 1}
    assert ledger[case.id]["rekeyedFrom"] == old and ledger[case.id]["scheme"] == 2
    assert breaks_ledger.state(ledger[case.id], breaks_ledger.digest(case)) == "verified"
    assert ledger[other.id]["digest"] == "not-what-it-ran-on"  # its inputs then are not today's: stays stale
    assert breaks_rekey.rekey(ledger, [case, other])["rekeyed, verified"] == 0  # once only
    # the test's own code changes: re-keyed, and stale
    (repo / "conformance" / "test_m.py").write_text(MODULE.replace("LIMIT = 3", "LIMIT = 4"))
    fresh = {case.id: entry(old)}
    assert breaks_rekey.rekey(fresh, [case])["rekeyed, test changed"] == 1
    assert breaks_ledger.state(fresh[case.id], breaks_ledger.digest(case)) == "stale"
    # a dirty or unknown commit cannot be rebuilt
    for at in (commit + "-dirty", "0123456789ab"):
        assert breaks_rekey.rekey({case.id: entry(old, at)}, [case])["not rebuildable"] == 1
    json.dumps(ledger)


def test_fixtures_taken_by_name_only_count():
    text = MODULE + textwrap.dedent('''

        @pytest.fixture(autouse=True)
        def always():
            yield 1


        @pytest.fixture
        def named():
            yield 2


        @pytest.mark.usefixtures("named")
        def test_third(ctx):
            assert ctx
    ''')
    code = code_of("third", text)
    assert "def always" in code and "def named" in code
    assert code_of("third", text.replace("yield 2", "yield 3")) != code
    assert "def always" in code_of("thing", text)
