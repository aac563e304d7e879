"""What the head-loss and serve-endpoint tests assert: the serve Service's endpoints, the head's ray.io/serve label,
kept worker Pods, and (on a watched RayService) serving again from the same cluster, staying Ready, no new cluster."""
from __future__ import annotations

import time
import types

import pytest
from kubernetes import client

from rayconformance.testing import ray
from rayconformance.testing.expect import raycluster_pods, rayservice
from rayconformance.testing.expect import rayservice_history as history
from rayconformance.testing.watch import Version, Watch


def pod(name: str, uid: str = "u", ready: bool = True, serve: str | None = "true", restarts: int = 0):
    labels = {"ray.io/serve": serve} if serve is not None else {}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, uid=uid, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="ray")]),
        status=client.V1PodStatus(phase="Running", conditions=[client.V1PodCondition(type="Ready",
                                                                                     status=str(ready))],
                                  container_statuses=[client.V1ContainerStatus(
                                      name="ray", restart_count=restarts, ready=ready, image="i", image_id="i")]))


def endpoint(name: str, ready: bool):
    return client.V1Endpoint(addresses=["10.0.0.1"], conditions=client.V1EndpointConditions(ready=ready),
                             target_ref=client.V1ObjectReference(kind="Pod", name=name))


def slices(monkeypatch, *per_slice):
    seen = {}

    class Discovery:
        def __init__(self, api):
            pass

        def list_namespaced_endpoint_slice(self, namespace, label_selector):
            seen["selector"] = label_selector
            return types.SimpleNamespace(items=[client.V1EndpointSlice(address_type="IPv4", endpoints=list(eps))
                                                for eps in per_slice])

    monkeypatch.setattr(client, "DiscoveryV1Api", Discovery)
    return seen


def pods(monkeypatch, *listed):
    monkeypatch.setattr(ray, "cluster_pods", lambda api, ns, cluster, node_type=None: [
        p for p in listed if node_type is None or p.metadata.name.split("-")[-1] == node_type])


RS = {"metadata": {"name": "svc"}, "spec": {}}


def test_serve_endpoints_merges_slices_by_pod(monkeypatch):
    seen = slices(monkeypatch, [endpoint("c-head", True), endpoint("c-worker", False)], [endpoint("c-worker", True)],
                  [client.V1Endpoint(addresses=["10.0.0.9"])])
    assert rayservice.serve_endpoints(None, "ns", "svc-serve-svc") == {"c-head": True, "c-worker": True}
    assert seen["selector"] == "kubernetes.io/service-name=svc-serve-svc"


def test_serve_endpoints_must_be_names_expected_and_observed(monkeypatch):
    slices(monkeypatch, [endpoint("c-head", True), endpoint("c-worker", True)])
    pods(monkeypatch, pod("c-head"), pod("c-worker"))
    assert rayservice.serve_endpoints_must_be(None, "ns", RS, "c", ["c-worker", "c-head"], 1, why="both") == \
        {"c-head": True, "c-worker": True}
    with pytest.raises(AssertionError, match=r"waiting for the serve Service svc-serve-svc to route to exactly "
                                             r"\['c-head'\] \(the worker has no proxy\); last observed: ready "
                                             r"endpoints \['c-head', 'c-worker'\], not ready \[\]; Pods of c: "
                                             r"c-head\(ray.io/serve='true', Ready\), c-worker\(ray.io/serve='true'"):
        rayservice.serve_endpoints_must_be(None, "ns", RS, "c", ["c-head"], 0.05, why="the worker has no proxy")


def test_head_must_be_labeled_serving(monkeypatch):
    pods(monkeypatch, pod("c-head", serve="false"))
    with pytest.raises(AssertionError, match=r"the head Pod of c to be labeled ray.io/serve='true' \(its proxy "
                                             r"answers\); last observed: c-head\(ray.io/serve='false', Ready\)"):
        rayservice.head_must_be_labeled_serving(None, "ns", "c", "true", 0.05, why="its proxy answers")
    pods(monkeypatch, pod("c-head", serve="true"))
    assert rayservice.head_must_be_labeled_serving(None, "ns", "c", "true", 1, why="x").metadata.name == "c-head"


def test_application_status():
    obj = {"status": {"activeServiceStatus": {"applicationStatuses": {"greeter": {"status": "RUNNING"}}}}}
    assert rayservice.application_status(obj, "greeter") == "RUNNING"
    assert rayservice.application_status(obj, "other") is None and rayservice.application_status(None, "g") is None


def test_workers_must_be_kept(monkeypatch):
    pods(monkeypatch, pod("c-worker", uid="w1"))
    before = raycluster_pods.worker_pods_now(None, "ns", "c")
    assert before == {"w1": ("c-worker", 0)}
    raycluster_pods.workers_must_be_kept(None, "ns", "c", before, through="the loss of the head")
    pods(monkeypatch, pod("c-worker", uid="w2"))
    with pytest.raises(AssertionError, match=r"expected the worker Pods of c to be kept through the loss of the head "
                                             r"\(same Pods, not restarted, Running and Ready\): c-worker uid=w1 "
                                             r"restarts=0; observed c-worker uid=w2 restarts=0"):
        raycluster_pods.workers_must_be_kept(None, "ns", "c", before, through="the loss of the head")
    pods(monkeypatch, pod("c-worker", uid="w1", restarts=1))
    with pytest.raises(AssertionError, match=r"observed c-worker uid=w1 restarts=1"):
        raycluster_pods.workers_must_be_kept(None, "ns", "c", before, through="x")


class FakeWatch:
    """A Watch with versions already seen (its `first` and snapshot, no API)."""
    first = Watch.first
    snapshot = Watch.snapshot
    now = Watch.now

    def __init__(self, *versions: tuple[str, dict]):
        import threading

        self.clock, self.start, self.changed, self.error, self.what = time.monotonic, 0.0, threading.Condition(), \
            None, "RayService svc"
        self.versions = [Version(float(i), float(i), t, o) for i, (t, o) in enumerate(versions)]

    must_not_have_failed = Watch.must_not_have_failed
    _must_have_seen_all = Watch._must_have_seen_all
    gaps: list = []


def rs(active="c", pending=None, ready=True, app="RUNNING", name="svc") -> dict:
    return {"metadata": {"name": name}, "status": {
        "conditions": [{"type": "Ready", "status": str(ready), "reason": "R"}],
        "activeServiceStatus": {"rayClusterName": active, "applicationStatuses": {"greeter": {"status": app}}
                                if app else {}},
        "pendingServiceStatus": {"rayClusterName": pending} if pending else {}}}


def current(monkeypatch, obj):
    monkeypatch.setattr(ray.RayResources, "__init__", lambda self, api, ns, kind: None)
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: obj)


def test_rayservice_must_serve_again_from(monkeypatch):
    current(monkeypatch, rs())
    watch = FakeWatch(("LISTED", rs()), ("MODIFIED", rs(app=None)))
    assert history.rayservice_must_serve_again_from(watch, None, "ns", "svc", "c", "greeter", 1, after="x") == rs()
    current(monkeypatch, rs(app="DEPLOYING"))
    with pytest.raises(AssertionError, match=r"waiting for RayService svc to serve again from RayCluster c after the "
                                             r"loss \(Ready=True, application greeter RUNNING, no pending RayCluster\)"
                                             r"; last observed: .*application greeter: DEPLOYING"):
        history.rayservice_must_serve_again_from(watch, None, "ns", "svc", "c", "greeter", 0.05, after="the loss")


def test_rayservice_must_serve_again_from_fails_at_once_on_a_pending_cluster(monkeypatch):
    current(monkeypatch, rs())
    watch = FakeWatch(("LISTED", rs()), ("MODIFIED", rs(pending="d")), ("MODIFIED", rs()))
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"(?s)after the loss, RayService svc must stay on RayCluster c with no "
                                             r"pending one; observed at 1.0s active/pending \('c', 'd'\); observed, "
                                             r"in order:\n  .*active=c; pending=d"):
        history.rayservice_must_serve_again_from(watch, None, "ns", "svc", "c", "greeter", 30, after="the loss")
    assert time.monotonic() - t0 < 5


def test_rayservice_must_have_stayed_ready():
    history.rayservice_must_have_stayed_ready(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(app=None))), "svc",
                                              through="x")
    with pytest.raises(AssertionError, match=r"RayService svc must stay Ready=True through the loss; observed at "
                                             r"1.0s: Ready=False\(R\)"):
        history.rayservice_must_have_stayed_ready(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(ready=False))), "svc",
                                                  through="the loss")


def test_no_raycluster_must_be_created():
    c = {"metadata": {"name": "c"}}
    history.no_raycluster_must_be_created(FakeWatch(("LISTED", c), ("MODIFIED", c)), through="x")
    with pytest.raises(AssertionError, match=r"no RayCluster may be created through the loss \(there were \['c'\]\); "
                                             r"observed RayCluster d created at 1.0s"):
        history.no_raycluster_must_be_created(FakeWatch(("LISTED", c), ("ADDED", {"metadata": {"name": "d"}})),
                                              through="the loss")


def test_initializing_timeout_must_not_fire_early():
    def ready(reason):
        return {"metadata": {"name": "svc"},
                "status": {"conditions": [{"type": "Ready", "status": "False", "reason": reason}]}}

    def seen(at_timeout: float) -> FakeWatch:
        w = FakeWatch(("ADDED", {"metadata": {"name": "svc"}}), ("MODIFIED", ready("Initializing")),
                      ("MODIFIED", ready("InitializingTimeout")))
        w.versions[1].t, w.versions[2].t = 2.0, 2.0 + at_timeout
        return w

    history.initializing_timeout_must_not_fire_early(seen(17.5), 20, 0)
    with pytest.raises(AssertionError, match=r"must not fire before it has passed: .* observed it 5.0s after"):
        history.initializing_timeout_must_not_fire_early(seen(5), 20, 0)
    with pytest.raises(AssertionError, match=r"to be seen Ready=False/Initializing and then"):
        history.initializing_timeout_must_not_fire_early(FakeWatch(("ADDED", ready("Initializing"))), 20, 0)


class _SeenSlices:
    """What serve_endpoints_must_have_stayed reads from a watch: its versions of EndpointSlices, in order."""

    def __init__(self, *versions):
        self.versions = [types.SimpleNamespace(t=float(i), type=kind, name=name, obj={
            "metadata": {"name": name},
            "endpoints": [{"targetRef": {"kind": "Pod", "name": p}, "conditions": {"ready": r}} for p, r in eps]})
            for i, (kind, name, eps) in enumerate(versions)]

    def must_not_have_failed(self):
        pass

    def snapshot(self):
        return self.versions

    def now(self):
        return float(len(self.versions))


def test_serve_endpoints_that_kept_the_worker_pass_and_report_how_long_none_was_ready():
    seen = _SeenSlices(("LISTED", "s1", [("worker", True)]), ("MODIFIED", "s1", [("worker", False), ("head", False)]),
                       ("MODIFIED", "s1", [("worker", True)]))
    assert rayservice.serve_endpoints_must_have_stayed(seen, ["worker"], through="the loss of the head") == 1.0


@pytest.mark.parametrize("versions, observed", [
    ([("LISTED", "s1", [("worker", True)]), ("MODIFIED", "s1", [])], r"listed \[\], ready \[\]"),
    ([("LISTED", "s1", [("worker", True)]), ("MODIFIED", "s1", [("worker", True), ("head", True)])],
     r"at 1.0s listed \['head', 'worker'\], ready \['head', 'worker'\]"),
    ([("LISTED", "s1", [("worker", True)]), ("DELETED", "s1", [("worker", True)])], r"listed \[\], ready \[\]"),
])
def test_serve_endpoints_that_lost_the_worker_or_gained_the_head_fail(versions, observed):
    with pytest.raises(AssertionError, match=r"must select \['worker'\] and route to no other Pod through the "
                                             r"loss of the head; observed .*" + observed):
        rayservice.serve_endpoints_must_have_stayed(_SeenSlices(*versions), ["worker"], through="the loss of the head")
