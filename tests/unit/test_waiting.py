"""wait_for: returns the observed value, counts exceptions as "not yet", and explains timeouts."""
from __future__ import annotations

import itertools

import pytest

from rayconformance.fixtures.waiting import Timeouts, wait_for


def test_returns_the_value_once_the_probe_is_ok():
    counter = itertools.count()
    assert wait_for(lambda: ((n := next(counter)) >= 3, n), 5, "a count of 3", interval=0.01) == 3


def test_exceptions_mean_not_yet():
    attempts = iter([KeyError("missing"), KeyError("missing"), None])

    def probe():
        if (e := next(attempts)) is not None:
            raise e
        return True, "there"

    assert wait_for(probe, 5, "the object", interval=0.01) == "there"


def test_timeout_names_what_was_awaited_and_the_last_observation():
    with pytest.raises(AssertionError) as e:
        wait_for(lambda: (False, {"state": "pending"}), 0.05, "RayCluster rc to be ready", interval=0.01)
    assert str(e.value).startswith("timed out after 0.05s waiting for RayCluster rc to be ready; last observed: ")
    assert "state: pending" in str(e.value)


def test_timeout_uses_observe_and_reports_exceptions():
    with pytest.raises(AssertionError, match="last observed: 2 Pods Pending"):
        wait_for(lambda: (False, None), 0.05, "Pods", observe=lambda: "2 Pods Pending", interval=0.01)
    with pytest.raises(AssertionError, match="last observed: KeyError: 'gone'"):
        wait_for(lambda: {}["gone"], 0.05, "a key", interval=0.01)


def test_consecutive_successes_are_required():
    flaps = iter([True, False, True, True, True])
    assert wait_for(lambda: (next(flaps), "stable"), 5, "stable", interval=0.01, consecutive=3) == "stable"
    flapping = itertools.cycle([True, False])
    with pytest.raises(AssertionError, match=r"\(1 of 3 consecutive successes at best\)"):
        wait_for(lambda: (next(flapping), None), 0.1, "stable", interval=0.01, consecutive=3)


def test_timeouts_scale():
    assert Timeouts.scaled(2) == Timeouts(120, 360, 1200)
