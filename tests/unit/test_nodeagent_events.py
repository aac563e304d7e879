"""The node agent's event recorder: a repeat is folded into the posted Event (count, lastTimestamp), as a kubelet's
recorder does; a new message, another Pod or a repeat after the folding window is a new Event."""
from __future__ import annotations

import datetime as dt

from rayconformance.clusters.local.nodeagent.events import FOLD_SECONDS, EventRecorder

POD = {"metadata": {"name": "ray-head", "namespace": "ns", "uid": "u1"}}
OTHER = {"metadata": {"name": "ray-worker", "namespace": "ns", "uid": "u2"}}


class RecordingKube:
    def __init__(self, fail_patch: bool = False):
        self.calls: list[tuple] = []
        self.fail_patch = fail_patch

    def create(self, path, body):
        self.calls.append(("create", path, body))

    def patch(self, path, body, content_type=None):
        self.calls.append(("patch", path, body))
        if self.fail_patch:
            raise RuntimeError("404 the Event expired")


def recorder(kube, t):
    return EventRecorder(kube, clock=lambda: t[0], now=lambda: dt.datetime(2026, 1, 1, 0, 0, int(t[0]) % 60,
                                                                             tzinfo=dt.timezone.utc))


def test_a_repeat_is_folded_into_the_posted_event():
    kube, t = RecordingKube(), [0.0]
    r = recorder(kube, t)
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", "spec.containers{ray-head}")
    t[0] = 5.0
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", "spec.containers{ray-head}")
    t[0] = 10.0
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", "spec.containers{ray-head}")
    assert [c[0] for c in kube.calls] == ["create", "patch", "patch"]
    created = kube.calls[0][2]
    assert created["count"] == 1 and created["involvedObject"]["fieldPath"] == "spec.containers{ray-head}"
    assert kube.calls[1][1] == f"/api/v1/namespaces/ns/events/{created['metadata']['name']}"
    assert [c[2]["count"] for c in kube.calls[1:]] == [2, 3]
    assert kube.calls[2][2]["lastTimestamp"] == "2026-01-01T00:00:10Z"


def test_a_new_message_another_pod_or_a_late_repeat_is_a_new_event():
    kube, t = RecordingKube(), [0.0]
    r = recorder(kube, t)
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", None)
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: timed out", None)
    r.post(OTHER, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", None)
    t[0] = FOLD_SECONDS + 1
    r.post(POD, "n1", "Warning", "Unhealthy", "Readiness probe failed: 503", None)
    assert [c[0] for c in kube.calls] == ["create"] * 4


def test_an_event_that_cannot_be_folded_is_posted_again():
    kube, t = RecordingKube(fail_patch=True), [0.0]
    r = recorder(kube, t)
    r.post(POD, "n1", "Normal", "Pulled", "image present", None)
    r.post(POD, "n1", "Normal", "Pulled", "image present", None)
    assert [c[0] for c in kube.calls] == ["create", "patch", "create"]
    assert kube.calls[2][2]["count"] == 1
