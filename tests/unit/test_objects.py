"""src/rayconformance/kube/objects.py without a cluster: a CRD still being deleted is waited out and then replaced, any
other API error ends the wait at once, and a timeout is one line naming what was awaited."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.kube import objects


class FakeCRDs:
    """An ApiextensionsV1Api whose CRD exists (being deleted for the first `deleting` reads) or fails with `error`."""

    def __init__(self, deleting: int = 0, error: int | None = None):
        self.deleting, self.error, self.calls = deleting, error, []

    def create_custom_resource_definition(self, obj):
        self.calls.append("create")
        raise ApiException(status=self.error or 409)

    def read_custom_resource_definition(self, name):
        self.calls.append("read")
        self.deleting -= 1
        meta = NS(deletion_timestamp="t" if self.deleting >= 0 else None, resource_version="7")
        return NS(metadata=meta, status=None)

    def replace_custom_resource_definition(self, name, obj):
        self.calls.append(("replace", obj["metadata"].get("resourceVersion")))


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x.ray.io"}}


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    real = objects.wait_until
    monkeypatch.setattr(objects, "wait_until", lambda *a, **kw: real(*a, **{**kw, "interval": 0.01}))


def test_a_crd_being_deleted_is_waited_out_then_replaced_at_its_version():
    ext = FakeCRDs(deleting=2)
    objects._create_or_replace_crd(ext, dict(CRD, metadata={"name": "x.ray.io"}), timeout=5)
    assert ext.calls[-1] == ("replace", "7") and ext.calls.count("create") == 3


def test_another_api_error_ends_the_wait_at_once():
    ext = FakeCRDs(error=403)
    with pytest.raises(ApiException):
        objects._create_or_replace_crd(ext, CRD, timeout=5)
    assert ext.calls == ["create"]


def test_a_crd_deleted_for_too_long_is_one_line():
    with pytest.raises(objects.ObjectsError, match=r"^CRD x.ray.io is still being deleted after 0s .*retry$"):
        objects._create_or_replace_crd(FakeCRDs(deleting=10**6), CRD, timeout=0.05)


def test_an_object_that_does_not_go_is_one_line_naming_it():
    def still_there(name):
        return NS(name=name)

    with pytest.raises(objects.ObjectsError) as e:
        objects._wait(lambda: objects._read_or_none(still_there, "ray-system") is None, bool,
                      "Namespace ray-system to go", 0.05, render=lambda _: "still there")
    assert str(e.value) == "timed out after 0.05s waiting for Namespace ray-system to go; last observed: still there"
