"""Per-test namespaces: valid names and labels; deletion waits until the namespace is gone."""
from __future__ import annotations

import re
from types import SimpleNamespace as NS

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.kube import namespaces

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.mark.parametrize("short", ["provisioning", "demand_scales_workers_up_and_idle_down[v2]", "X" * 120])
def test_names_are_dns_labels_within_63_characters(short):
    name = namespaces.namespace_name(short)
    assert name.startswith("rc-") and len(name) <= 63 and DNS_LABEL.match(name)


class FakeCore:
    def __init__(self, reads_until_gone=2):
        self.created, self.deleted, self.reads_left = [], [], reads_until_gone

    def create_namespace(self, body):
        self.created.append(body)

    def delete_namespace(self, name):
        self.deleted.append(name)

    def read_namespace(self, name):
        if self.reads_left == 0:
            raise ApiException(status=404)
        self.reads_left -= 1
        return NS(status=NS(phase="Terminating", conditions=[
            NS(type="NamespaceFinalizersRemaining", status="True", message="ray.io/gcs-ft-redis-cleanup-finalizer")]))


def test_create_labels_the_namespace_with_run_and_test():
    core = FakeCore()
    name = namespaces.create(core, "autoscaler[v1]", "20260101-000000-abc123")
    meta = core.created[0].metadata
    assert meta.name == name and meta.labels == {namespaces.RUN_LABEL: "20260101-000000-abc123",
                                                 namespaces.TEST_LABEL: "autoscaler-v1"}


def test_delete_waits_until_gone():
    core = FakeCore(reads_until_gone=2)
    namespaces.delete(core, "rc-x", timeout=5, interval=0.01)
    assert core.deleted == ["rc-x"] and core.reads_left == 0


def test_delete_times_out_with_what_holds_the_namespace():
    core = FakeCore(reads_until_gone=10**6)
    with pytest.raises(AssertionError, match="(?s)namespace rc-x to be deleted.*gcs-ft-redis-cleanup-finalizer"):
        namespaces.delete(core, "rc-x", timeout=0.05, interval=0.01)


def test_dns_label():
    assert namespaces.dns_label("Autoscaler[v1]__x") == "autoscaler-v1-x"
    assert len(namespaces.dns_label("a" * 100)) == 63
