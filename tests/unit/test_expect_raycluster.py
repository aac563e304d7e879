"""testing.expect.raycluster's must-holds that replaced the RayCluster tests' own waits, and the RayCluster
handle's default timeouts."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect import raycluster, raycluster_pods
from rayconformance.testing.handles.raycluster import RayCluster
from rayconformance.testing.waiting import Timeouts


def cluster(*conditions) -> dict:
    return {"kind": "RayCluster", "metadata": {"name": "rc"},
            "status": {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions]}}


@pytest.fixture
def stored(monkeypatch):
    """The RayCluster the API returns (set `stored["obj"]`); it has no Pods."""
    box = {"obj": None}
    monkeypatch.setattr(ray.RayResources, "__init__", lambda self, api, ns, kind: None)
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: box["obj"])
    monkeypatch.setattr(ray, "cluster_pods", lambda *a, **k: [])
    return box


def test_head_pod_ready_again_wants_a_false_seen_first(stored):
    stored["obj"] = cluster(("HeadPodReady", "True", "HeadPodRunningAndReady"))
    seen = {"HeadPodReady": [("True", "HeadPodRunningAndReady")]}
    with pytest.raises(AssertionError, match=r"waiting for RayCluster rc to report HeadPodReady=False after losing "
                                             r"its head Pod, then True again with the new head; last observed: "
                                             r"HeadPodReady over time: \[\('True', 'HeadPodRunningAndReady'\)\]"):
        raycluster.raycluster_must_report_head_pod_ready_again(None, "ns", "rc", seen.get, 0.05)
    seen["HeadPodReady"].append(("False", "HeadPodNotFound"))
    assert raycluster.raycluster_must_report_head_pod_ready_again(None, "ns", "rc", seen.get, 1) is stored["obj"]


def test_drop_replica_failure_and_report_conditions(stored):
    stored["obj"] = cluster(("ReplicaFailure", "True", "FailedCreateHeadPod"))
    with pytest.raises(AssertionError, match=r"RayCluster rc to drop ReplicaFailure once its head Pod could be "
                                             r"created; last observed: ReplicaFailure=True\(FailedCreateHeadPod\)"):
        raycluster.raycluster_must_drop_replica_failure(None, "ns", "rc", 0.05)
    assert raycluster.raycluster_must_report_conditions(None, "ns", "rc", 1) is stored["obj"]
    stored["obj"] = cluster()
    assert raycluster.raycluster_must_drop_replica_failure(None, "ns", "rc", 1) is stored["obj"]
    with pytest.raises(AssertionError, match=r"RayCluster rc to get status conditions from the operator"):
        raycluster.raycluster_must_report_conditions(None, "ns", "rc", 0.05)


def test_invalid_spec_needs_the_reason_and_the_field(monkeypatch, stored):
    event = SimpleNamespace(reason="InvalidRayClusterSpec", message="spec.foo is invalid")
    monkeypatch.setattr(raycluster, "warning_events_must_be_recorded", lambda *a, **k: [event])
    raycluster.raycluster_must_be_reported_invalid(None, "ns", "rc", "spec.foo", 1, about="x")
    with pytest.raises(AssertionError, match=r"expected a Warning event with reason InvalidRayClusterSpec naming the "
                                             r"offending field RAY_REDIS_ADDRESS, observed \[\('InvalidRayClusterSpec'"):
        raycluster.raycluster_must_be_reported_invalid(None, "ns", "rc", "RAY_REDIS_ADDRESS", 1, about="x")


def test_handle_waits_as_long_as_its_operation(monkeypatch):
    calls = []
    monkeypatch.setattr(raycluster, "raycluster_must_drop_replica_failure", lambda *a: calls.append(a[-1]))
    monkeypatch.setattr(raycluster_pods, "workers_must_be_running_and_ready", lambda *a, **k: calls.append(a[-1]))
    ctx = SimpleNamespace(k8s=None, namespace="ns", timeouts=Timeouts(1, 2, 3))
    rc = RayCluster(ctx, "rc")
    rc.must_drop_replica_failure()
    rc.workers_must_be_running_and_ready(1, what="x")
    rc.workers_must_be_running_and_ready(1, 7, what="x")
    assert calls == [ctx.timeouts.state, ctx.timeouts.upgrade, 7]


def test_no_auth_secret_of_the_operators(monkeypatch):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from rayconformance.testing.expect import raycluster_ray

    secrets = {}

    def read(self, name, namespace):
        if name not in secrets:
            raise ApiException(status=404)
        return secrets[name]

    monkeypatch.setattr(client.CoreV1Api, "read_namespaced_secret", read)
    raycluster_ray.auth_secret_must_not_exist(None, "ns", "rc", why="x")
    secrets["rc"] = SimpleNamespace(metadata=SimpleNamespace(owner_references=[SimpleNamespace(kind="RayCluster",
                                                                                              name="rc")]))
    with pytest.raises(AssertionError, match=r"with x the operator must not create a token Secret for RayCluster rc; "
                                             r"observed Secret rc \(owners \['RayCluster/rc'\]\)"):
        raycluster_ray.auth_secret_must_not_exist(None, "ns", "rc", why="x")
