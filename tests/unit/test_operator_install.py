"""fixtures/operator/installer.py without a cluster: waiting for the operator's Deployment ends in one line naming
its last state."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.fixtures.operator import OperatorError, installer

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
    installer.wait_ready({}, [DEPLOYMENT], None)


def test_an_operator_never_available_is_one_line_naming_its_last_state(monkeypatch):
    monkeypatch.setattr(installer.client, "AppsV1Api", lambda api: FakeApps(["False"] * 1000))
    monkeypatch.setattr(installer, "wait_until", _fast(installer.wait_until))
    with pytest.raises(OperatorError, match=r"^operator Deployment ray-system/kuberay-operator not Available after 0s "
                                            r"\(Available=False, readyReplicas=0\); see the operator Pod's log"):
        installer.wait_ready({"readyTimeoutSeconds": 0.05}, [DEPLOYMENT], None)


def _fast(wait_until):
    return lambda *a, **kw: wait_until(*a, **{**kw, "interval": 0.01})
