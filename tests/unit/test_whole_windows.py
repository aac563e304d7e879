"""No wait passes by running out: a window in which nothing could be observed, or events may have been lost, fails
instead of reading as "nothing happened" (`must_keep`, `Watch.first` after an error or a relist), and no helper of
`testing/expect` turns a timed-out wait into a pass."""
from __future__ import annotations

import ast
import itertools
import pathlib

import pytest

from rayconformance.testing.waiting import must_keep
from rayconformance.testing.watch import Watch
from rayconformance.kube.listwatch import Gap, ListWatch

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Clock:
    """A fake monotonic clock the pause advances."""

    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def pause(self, s: float) -> None:
        self.t += s


def test_must_keep_returns_after_a_whole_window_that_held():
    clock = Clock()
    looks = itertools.count()
    assert must_keep(lambda: next(looks), lambda n: True, "a count", 10, clock=clock, pause=clock.pause) == 10


def test_must_keep_fails_at_the_first_look_that_does_not_hold():
    clock = Clock()
    with pytest.raises(AssertionError, match=r"expected state A for 10s; after 3s observed: B"):
        must_keep(lambda: "B" if clock.t >= 3 else "A", lambda s: s == "A", "state A", 10, clock=clock,
                  pause=clock.pause)


def test_must_keep_fails_when_it_cannot_look():
    clock = Clock()

    def get():
        raise ConnectionError("the API server does not answer")

    with pytest.raises(AssertionError, match="could not observe state A: every look failed from 0s to 5s.*"
                                             "does not answer"):
        must_keep(get, lambda s: True, "state A", 60, clock=clock, pause=clock.pause)


def test_must_keep_rides_out_a_short_blind_spell_but_needs_a_look_past_the_end():
    clock = Clock()

    def get():
        if 2 <= clock.t < 4 or 9 <= clock.t < 12:
            raise ConnectionError("blip")
        return "A"

    assert must_keep(get, lambda s: s == "A", "state A", 10, clock=clock, pause=clock.pause) == "A"
    assert clock.t == 12


def watch_with(error: str | None = None, gaps: list[Gap] | None = None) -> Watch:
    w = Watch(lambda *a, **k: {"metadata": {"resourceVersion": "1"}, "items": []}, what="the RayClusters in ns")
    w.watch.error, w.watch.gaps = error, gaps or []
    return w


def test_first_finds_nothing_in_a_whole_watch():
    assert watch_with().first(lambda v: True, 0) is None


def test_first_fails_after_the_watch_failed_instead_of_finding_nothing():
    with pytest.raises(AssertionError, match="could not watch the RayClusters in ns for the whole window.*expired"):
        watch_with(error="the watch lost events (resource version expired)").first(lambda v: True, 0)


def test_first_needs_the_gaps_of_a_relisted_watch_checked():
    w = watch_with(gaps=[Gap(1.0, 2.5, "resource version expired: too old")])
    w.start = 0.0
    with pytest.raises(AssertionError, match=r"relisted and may have lost events at \+1.0s to \+2.5s"):
        w.first(lambda v: True, 0)
    assert w.first(lambda v: True, 0, gaps_checked=lambda gaps: None) is None
    with pytest.raises(AssertionError, match="a fresh look found: RayCluster other created"):
        w.first(lambda v: True, 0, gaps_checked=lambda gaps: "RayCluster other created")


def test_a_relist_records_its_gap():
    lists = iter([{"metadata": {"resourceVersion": "10"}, "items": []},
                  {"metadata": {"resourceVersion": "20"}, "items": []}])
    calls = []

    def stream(fn, *args, resource_version, timeout_seconds, **kwargs):
        calls.append(resource_version)
        if len(calls) == 1:
            yield {"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}
        else:
            lw.stopping.set()
            return

    lw = ListWatch(lambda kind, o: None, lambda *a, **k: next(lists), relist=True, stream=stream,
                   wait=lambda ev, s: None)
    with lw:
        lw.thread.join(5)
    assert lw.relists == 1 and len(lw.gaps) == 1 and lw.gaps[0].since <= lw.gaps[0].until
    assert "too old" in lw.gaps[0].reason


def test_no_expect_helper_catches_a_timed_out_wait():
    """`except AssertionError` around a wait turns "could not tell" into "did not happen"."""
    caught = []
    for path in sorted((ROOT / "src" / "rayconformance" / "testing" / "expect").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None and "AssertionError" in ast.unparse(
                    node.type):
                caught.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not caught, f"these catch AssertionError (a wait's verdict) in testing/expect: {caught}"


def test_no_expect_helper_ends_a_hold_when_its_time_runs_out():
    """`wait_until(get, lambda s: not held(s) or now >= until)` (in a helper or a test) passes on one good look at the
    end after a window of failed looks (a failed look is "not yet" to `wait_until`): a hold is `must_keep`'s."""
    found = []
    for path in sorted([*(ROOT / "src" / "rayconformance" / "testing").rglob("*.py"),
                        *(ROOT / "conformance").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            is_wait = isinstance(node, ast.Call) and ast.unparse(node.func).endswith("wait_until")
            if not (is_wait and len(node.args) > 1):
                continue
            holds = node.args[1]
            body = holds.body if isinstance(holds, ast.Lambda) else None
            if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.Or) and any(
                    isinstance(v, ast.Compare) and any(isinstance(op, (ast.GtE, ast.Gt)) for op in v.ops)
                    for v in body.values):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"these end a hold by the clock through wait_until (use must_keep): {found}"
