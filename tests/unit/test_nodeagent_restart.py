"""Unit tests of the node agent's restart policy, crash back-off, image pull back-off and grace periods."""
from __future__ import annotations

import pytest

from rayconformance.clusters.local.nodeagent import restart
from rayconformance.clusters.local.nodeagent.termination import grace_period


@pytest.mark.parametrize("kind, policy, code, expected", [
    ("app", "Always", 0, True),
    ("app", "Always", 1, True),
    ("app", "OnFailure", 0, False),
    ("app", "OnFailure", 137, True),
    ("app", "Never", 1, False),
    ("init", "Always", 0, False),
    ("init", "Always", 1, True),
    ("init", "OnFailure", 2, True),
    ("init", "Never", 1, False),
    ("sidecar", "Never", 0, True),
    ("sidecar", "OnFailure", 0, True),
])
def test_restart_policy(kind, policy, code, expected):
    assert restart.should_restart(kind, policy, code) is expected


@pytest.mark.parametrize("kind, pod_policy, own, code, expected", [
    ("app", "Never", "OnFailure", 137, True),
    ("app", "Never", "OnFailure", 0, False),
    ("app", "Never", "Always", 0, True),
    ("app", "Always", "Never", 1, False),
    ("app", "OnFailure", None, 1, True),
    ("init", "Never", "OnFailure", 1, False),  # an init container's own policy makes it a sidecar only if Always
])
def test_an_app_container_restart_policy_of_its_own_wins(kind, pod_policy, own, code, expected):
    assert restart.should_restart(kind, pod_policy, code, own) is expected


def test_crash_backoff_doubles_up_to_the_cap():
    backoff, delays, now = 0.0, [], 1000.0
    for _ in range(8):
        delay, backoff = restart.crash_backoff(backoff, started_at=now - 5, now=now)
        delays.append(delay)
        now += delay + 5
    assert delays == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0]
    assert backoff == restart.BACKOFF_MAX


def test_crash_backoff_resets_after_a_long_run():
    assert restart.crash_backoff(160.0, started_at=0.0, now=restart.BACKOFF_RESET) == (0.0, restart.BACKOFF_INITIAL)
    assert restart.crash_backoff(160.0, started_at=0.0, now=restart.BACKOFF_RESET - 1) == (160.0, 300.0)


def test_image_pull_alternates_between_err_and_back_off():
    seen, reason = [], None
    for failures in range(1, 11):
        reason, delay = restart.image_pull_retry(failures, reason)
        seen.append((reason, delay))
    assert seen[:4] == [("ErrImagePull", restart.RETRY), ("ImagePullBackOff", 10.0),
                        ("ErrImagePull", restart.RETRY), ("ImagePullBackOff", 40.0)]
    assert seen[5] == ("ImagePullBackOff", 160.0)
    assert seen[7] == seen[9] == ("ImagePullBackOff", restart.BACKOFF_MAX)
    assert restart.image_pull_retry(3, "ContainerCreating") == ("ErrImagePull", restart.RETRY)


def test_grace_period():
    assert grace_period({}) == 30.0
    assert grace_period({"terminationGracePeriodSeconds": 0}) == 0.0
    pod = {"terminationGracePeriodSeconds": 45}
    assert grace_period(pod) == 45.0
    assert grace_period(pod, {"name": "c"}) == 45.0
    assert grace_period(pod, {"livenessProbe": {"terminationGracePeriodSeconds": 5}}) == 5.0
    assert grace_period(pod, {"startupProbe": {"terminationGracePeriodSeconds": 7},
                              "livenessProbe": {"periodSeconds": 1}}) == 7.0
