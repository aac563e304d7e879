"""wait_until (and the older wait_for): returns the observed object, counts exceptions as "not yet", and explains
timeouts with a short rendering of the last observation."""
from __future__ import annotations

import datetime as dt
import itertools

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.testing.waiting import Timeouts, describe, wait_for, wait_until


def test_returns_the_object_once_it_holds():
    counter = itertools.count()
    assert wait_until(lambda: next(counter), lambda n: n >= 3, "a count of 3", 5, interval=0.01) == 3


def test_exceptions_from_get_or_holds_mean_not_yet():
    attempts = iter([KeyError("missing"), {}, {"status": {"ready": True}}])

    def get():
        if isinstance(a := next(attempts), Exception):
            raise a
        return a

    assert wait_until(get, lambda o: o["status"]["ready"], "ready", 5, interval=0.01) == {"status": {"ready": True}}


def test_timeout_names_what_was_awaited_and_the_object_in_short():
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", "uid": "u", "labels": {"a": "b"}},
          "spec": {"huge": "x" * 5000},
          "status": {"state": "pending", "conditions": [{"type": "HeadPodReady", "status": "False", "reason": "X",
                                                         "message": "m", "lastTransitionTime": "t"}]}}
    with pytest.raises(AssertionError) as e:
        wait_until(lambda: rc, lambda o: False, "RayCluster rc to be ready", 0.05, interval=0.01)
    assert str(e.value) == ("timed out after 0.05s waiting for RayCluster rc to be ready; last observed: "
                            "RayCluster rc: HeadPodReady=False(X); {state: pending}")


def test_timeout_reports_the_last_exception_and_render_replaces_the_rendering():
    with pytest.raises(AssertionError, match=r"last observed: ApiException: HTTP 404 Not Found$"):
        wait_until(lambda: _raise(ApiException(status=404, reason="Not Found")), bool, "an object", 0.05,
                   interval=0.01)
    with pytest.raises(AssertionError, match="last observed: 2 Pods Pending"):
        wait_until(lambda: [1, 2], lambda ps: False, "Pods", 0.05, render=lambda ps: f"{len(ps)} Pods Pending",
                   interval=0.01)


def test_client_models_are_rendered_by_status():
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p", deletion_timestamp=dt.datetime(2026, 1, 1),
                                                    finalizers=["f"]),
                       status=client.V1PodStatus(phase="Running", conditions=[
                           client.V1PodCondition(type="Ready", status="True")]))
    assert describe(pod) == ("Pod p (deleting since 2026-01-01 00:00:00, finalizers ['f']): Ready=True(); "
                             "{phase: Running}")
    assert describe(client.V1DeploymentStatus(ready_replicas=0)) == "{ready_replicas: 0}"


def test_consecutive_successes_are_required():
    flaps = iter([True, False, True, True, True])
    assert wait_until(lambda: next(flaps), bool, "stable", 5, interval=0.01, consecutive=3) is True
    flapping = itertools.cycle([True, False])
    with pytest.raises(AssertionError, match=r"\(1 of 3 consecutive successes at best\)"):
        wait_until(lambda: next(flapping), bool, "stable", 0.1, interval=0.01, consecutive=3)


def test_wait_for_keeps_its_probe_and_observe_form():
    counter = itertools.count()
    assert wait_for(lambda: ((n := next(counter)) >= 3, n), 5, "a count of 3", interval=0.01) == 3
    with pytest.raises(AssertionError, match="last observed: 2 Pods Pending"):
        wait_for(lambda: (False, None), 0.05, "Pods", observe=lambda: "2 Pods Pending", interval=0.01)
    with pytest.raises(AssertionError, match="last observed: KeyError: 'gone'"):
        wait_for(lambda: {}["gone"], 0.05, "a key", interval=0.01)


def test_timeouts_scale():
    assert Timeouts.scaled(2) == Timeouts(120, 360, 1200)


def _raise(e: Exception):
    raise e
