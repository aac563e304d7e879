"""src/rayconformance/operator/installer.py without a cluster: waiting for the operator's Deployment ends in one line
naming its last state; CRDs the cluster had before the install are left to their owner by the uninstall."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import yaml
from kubernetes.client.rest import ApiException

from rayconformance.operator import OperatorError, installer
from rayconformance.operator.install_section import InstallSection

DEPLOYMENT = {"kind": "Deployment", "metadata": {"name": "kuberay-operator", "namespace": "ray-system"}}


class FakeApps:
    def __init__(self, states):
        self.states = iter(states)

    def read_namespaced_deployment(self, name, ns):
        state = next(self.states)
        if isinstance(state, Exception):
            raise state
        return NS(status=NS(conditions=[NS(type="Available", status=state)],
                            ready_replicas=1 if state == "True" else 0))


def test_the_operator_is_ready_once_available_with_a_ready_replica(monkeypatch):
    states = [ApiException(status=404), "False", "True"]
    monkeypatch.setattr(installer.client, "AppsV1Api", lambda api: FakeApps(states))
    monkeypatch.setattr(installer, "wait_until", _fast(installer.wait_until))
    installer.wait_ready(InstallSection(), [DEPLOYMENT], None)


def test_an_operator_never_available_is_one_line_naming_its_last_state(monkeypatch):
    monkeypatch.setattr(installer.client, "AppsV1Api", lambda api: FakeApps(["False"] * 1000))
    monkeypatch.setattr(installer, "wait_until", _fast(installer.wait_until))
    with pytest.raises(OperatorError, match=r"^operator Deployment ray-system/kuberay-operator not Available after 0s "
                                            r"\(Available=False, readyReplicas=0\); see the operator Pod's log"):
        installer.wait_ready(InstallSection(ready_timeout_seconds=0.05), [DEPLOYMENT], None)


def _fast(wait_until):
    return lambda *a, **kw: wait_until(*a, **{**kw, "interval": 0.01})


def crd(name: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}


def test_crds_the_cluster_already_served_are_kept_by_the_uninstall(monkeypatch, tmp_path):
    served = [NS(metadata=NS(name="gateways.gateway.networking.k8s.io", deletion_timestamp=None)),
              NS(metadata=NS(name="httproutes.gateway.networking.k8s.io", deletion_timestamp="2026-12-02T00:00:00Z")),
              NS(metadata=NS(name="widgets.example.io", deletion_timestamp=None))]
    monkeypatch.setattr(installer.client, "ApiextensionsV1Api",
                        lambda api: NS(list_custom_resource_definition=lambda: NS(items=served)))
    objects = [crd("rayclusters.ray.io"), crd("gateways.gateway.networking.k8s.io"),
               crd("httproutes.gateway.networking.k8s.io"), DEPLOYMENT]
    kept = installer.present_crds(objects, None)
    assert kept == ["gateways.gateway.networking.k8s.io"]  # one being deleted is not the owner's any more

    (tmp_path / installer.INSTALLED_FILE).write_text(yaml.safe_dump_all(objects))
    (tmp_path / installer.KEPT_CRDS_FILE).write_text(yaml.safe_dump(kept))
    deleted = []
    monkeypatch.setattr(installer, "api_client", lambda kubeconfig: None)
    monkeypatch.setattr(installer.helm, "uninstall_release", lambda *a: None)
    monkeypatch.setattr(installer, "delete_all", lambda objs, api, timeout: deleted.extend(objs))
    installer.uninstall(None, NS(kubeconfig="kc"), tmp_path)
    assert [o["metadata"]["name"] for o in deleted] == \
        ["rayclusters.ray.io", "httproutes.gateway.networking.k8s.io", "kuberay-operator"]
