"""The local test bed's control plane (issue 3): real apiserver, controllers and scheduler, and a clean teardown."""
from __future__ import annotations

import os
import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from rayconformance.clusters import definition
from rayconformance.clusters.local import network
from rayconformance.clusters.local.testbed import TestBed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def control_plane(beds):
    beds.close()  # one test bed at a time: this module needs a control plane without nodes
    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    bed = TestBed(definition.load("local-cpu"))
    r = bed.up(nodes=False)
    try:
        yield bed, config.new_client_from_config(str(r.kubeconfig))
    finally:
        bed.down()


def until(pred, timeout=60.0, what=""):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last observed: {last!r}")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.rayconformance.io"},
    "spec": {"group": "test.rayconformance.io", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_objects_watch_and_namespace_deletion(control_plane):
    _, api = control_plane
    core, apps, ext, co = (client.CoreV1Api(api), client.AppsV1Api(api), client.ApiextensionsV1Api(api),
                           client.CustomObjectsApi(api))
    ns = "cp-test"
    core.create_namespace({"metadata": {"name": ns}})
    # the service-account controller gives every namespace a default ServiceAccount
    until(lambda: core.list_namespaced_service_account(ns).items, what="default ServiceAccount")
    until(lambda: [c for c in core.list_namespaced_config_map(ns).items if c.metadata.name == "kube-root-ca.crt"],
          what="kube-root-ca.crt ConfigMap")
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"k": "v"}})
    apps.create_namespaced_deployment(ns, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    # Deployment -> ReplicaSet -> Pods (Pending: there are no nodes yet)
    pods = until(lambda: [p for p in core.list_namespaced_pod(ns).items if p.status.phase == "Pending"] or None,
                 what="2 Pending Pods")
    until(lambda: len(core.list_namespaced_pod(ns).items) == 2, what="2 Pods")
    assert all(p.spec.node_name is None for p in pods)

    ext.create_custom_resource_definition(CRD)
    until(lambda: any(c.type == "Established" and c.status == "True"
                      for c in ext.read_custom_resource_definition(CRD["metadata"]["name"]).status.conditions or []),
          what="CRD Established")
    until(lambda: _try(lambda: co.list_namespaced_custom_object("test.rayconformance.io", "v1", ns, "widgets")),
          what="CRD served")
    co.create_namespaced_custom_object("test.rayconformance.io", "v1", ns, "widgets",
                                       {"apiVersion": "test.rayconformance.io/v1", "kind": "Widget",
                                        "metadata": {"name": "w"}, "spec": {"size": 1}})
    seen = []
    w = watch.Watch()

    def watch_status():
        for ev in w.stream(co.list_namespaced_custom_object, "test.rayconformance.io", "v1", ns, "widgets",
                           timeout_seconds=30):
            if ev["type"] == "MODIFIED" and (ev["object"].get("status") or {}).get("phase") == "Ready":
                seen.append(ev["object"])
                w.stop()

    t = threading.Thread(target=watch_status)
    t.start()
    until(lambda: w._stop is False and t.is_alive(), what="watch started")
    co.patch_namespaced_custom_object_status("test.rayconformance.io", "v1", ns, "widgets", "w",
                                             {"status": {"phase": "Ready"}})
    t.join(35)
    assert seen, "the status update never arrived on the watch"

    core.delete_namespace(ns)
    until(lambda: not _try(lambda: core.read_namespace(ns)), timeout=120, what="namespace gone")
    ext.delete_custom_resource_definition(CRD["metadata"]["name"])


def _try(fn):
    try:
        return fn() or True
    except ApiException:
        return None


def test_teardown_leaves_nothing(control_plane):
    bed, _ = control_plane
    pids = [int(p.read_text()) for p in (bed.state / "pids").glob("*.pid")]
    bed.down()
    alive = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and
             open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"]
    assert not alive, f"processes left after teardown: {alive}"
    assert not bed.state.exists(), f"state dir {bed.state} left after teardown"
    assert network.leftovers() == [], f"network state left after teardown: {network.leftovers()}"
    mounts = [line for line in open("/proc/mounts") if "rayconformance" in line]
    assert not mounts, f"mounts left after teardown: {mounts}"
    routes = os.popen("ip route").read()
    assert "10.240.0." not in routes, f"routes left after teardown: {routes}"
