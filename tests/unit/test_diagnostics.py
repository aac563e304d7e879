"""Diagnostics: no Secret value reaches a file, and a failed test's namespace is saved piece by piece."""
from __future__ import annotations

import base64
from types import SimpleNamespace as NS

import pytest
from kubernetes import client

from rayconformance.kube import client as kube
from rayconformance.report import diagnostics
from rayconformance.report.diagnostics import REDACTED, collect, redact, scrub, secret_values

PASSWORD = "hunter2-very-secret"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_redact_secret_values_and_last_applied_configuration():
    secret = {"kind": "Secret", "metadata": {"name": "redis", "annotations": {
        diagnostics.LAST_APPLIED: f'{{"data": {{"password": "{b64(PASSWORD)}"}}}}', "team": "ray"}},
        "data": {"password": b64(PASSWORD)}, "stringData": {"user": "admin-user"}}
    out = redact(secret)
    assert out["data"] == {"password": REDACTED} and out["stringData"] == {"user": REDACTED}
    assert out["metadata"]["annotations"] == {diagnostics.LAST_APPLIED: REDACTED, "team": "ray"}
    assert secret["data"]["password"] == b64(PASSWORD), "the input must not be changed"


def test_redact_env_values_taken_from_secrets_anywhere_in_an_object():
    pod = {"kind": "Pod", "spec": {"containers": [{"env": [
        {"name": "REDIS_PASSWORD", "value": PASSWORD, "valueFrom": {"secretKeyRef": {"name": "redis", "key": "pw"}}},
        {"name": "FROM_CONFIGMAP", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
        {"name": "PLAIN", "value": "visible"}]}]}}
    env = redact(pod)["spec"]["containers"][0]["env"]
    assert env[0]["value"] == REDACTED and env[0]["valueFrom"] == pod["spec"]["containers"][0]["env"][0]["valueFrom"]
    assert env[1] == pod["spec"]["containers"][0]["env"][1] and env[2]["value"] == "visible"


def test_secret_values_are_scrubbed_from_text_but_short_ones_are_not():
    values = secret_values([{"data": {"pw": b64(PASSWORD), "n": b64("1")}, "stringData": {"token": "tok-123456"}}])
    assert values == {PASSWORD, "tok-123456"}
    assert scrub(f"redis-cli -a {PASSWORD} ping; 1 token tok-123456", values) == \
        f"redis-cli -a {REDACTED} ping; 1 token {REDACTED}"


def pod(name: str, restarts: int) -> client.V1Pod:
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name, namespace="ns"), status=client.V1PodStatus(
        container_statuses=[client.V1ContainerStatus(name="ray-head", restart_count=restarts, image="i",
                                                     image_id="", ready=True)]))


class FakeCore:
    def __init__(self, secrets_fail=False):
        self.secrets_fail = secrets_fail

    def list_namespaced_secret(self, namespace):
        if self.secrets_fail:
            raise client.ApiException(status=403, reason="Forbidden")
        return NS(items=[client.V1Secret(metadata=client.V1ObjectMeta(name="redis"), data={"pw": b64(PASSWORD)})])

    def list_namespaced_pod(self, namespace, label_selector=None):
        if namespace == "ray-system":
            assert label_selector == "app=kuberay"
            return NS(items=[pod("kuberay-operator-1", 0)])
        if namespace == "gateway-ns":
            assert label_selector == "app=traefik"
            return NS(items=[pod("traefik-1", 0)])
        return NS(items=[pod("head", 1)])

    def list_namespaced_service(self, namespace):
        return NS(items=[client.V1Service(metadata=client.V1ObjectMeta(name="head-svc"))])

    def list_namespaced_event(self, namespace):
        raise client.ApiException(status=500, reason="boom")

    def read_namespaced_pod_log(self, name, namespace, container, previous=False, since_seconds=None):
        return f"{name}/{container} previous={previous} since={since_seconds} password={PASSWORD}\n"


@pytest.fixture
def fake_api(monkeypatch):
    core = FakeCore()
    monkeypatch.setattr(kube, "core", lambda api: core)
    monkeypatch.setattr(kube, "ray_objects", lambda api, ns: {"RayCluster": [{"metadata": {"name": "rc"}}]})
    monkeypatch.setattr(client, "BatchV1Api", lambda api: NS(list_namespaced_job=lambda ns: NS(items=[])))
    selector = NS(spec=NS(selector=NS(match_labels={"app": "kuberay"})))
    monkeypatch.setattr(client, "AppsV1Api", lambda api: NS(read_namespaced_deployment=lambda name, ns: selector))
    eps = client.V1EndpointSlice(address_type="IPv4", endpoints=[], metadata=client.V1ObjectMeta(name="serve-abc"))
    monkeypatch.setattr(client, "DiscoveryV1Api",
                        lambda api: NS(list_namespaced_endpoint_slice=lambda ns: NS(items=[eps])))

    def gateway_objects(group, version, ns, plural):
        return {"items": [{"metadata": {"name": "greeter-httproute"}}] if plural == "httproutes" else []}
    monkeypatch.setattr(client, "CustomObjectsApi", lambda api: NS(list_namespaced_custom_object=gateway_objects))
    return core


def test_collect_saves_objects_and_logs_without_secret_values(fake_api, tmp_path):
    errors = collect(client.ApiClient(), "ns", tmp_path, operator=("ray-system", "kuberay-operator"), since_seconds=90,
                     also_logs=(("gateway-ns", "app=traefik", "gateway"),))
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["endpointslices.yaml", "errors.txt", "gateway/traefik-1.ray-head.log", "httproutes.yaml",
                     "jobs.yaml", "logs/head.ray-head.log", "logs/head.ray-head.previous.log",
                     "operator/kuberay-operator-1.ray-head.log", "pods.yaml", "rayclusters.yaml", "services.yaml"]
    assert "since=90" in (tmp_path / "gateway/traefik-1.ray-head.log").read_text()
    assert "kind: HTTPRoute" in (tmp_path / "httproutes.yaml").read_text()
    assert errors == ["events: ApiException: (500) Reason: boom"]
    assert "kind: RayCluster" in (tmp_path / "rayclusters.yaml").read_text()
    assert "previous=True" in (tmp_path / "logs/head.ray-head.previous.log").read_text()
    assert "since=90" in (tmp_path / "operator/kuberay-operator-1.ray-head.log").read_text()
    for f in tmp_path.rglob("*"):
        assert f.is_dir() or PASSWORD not in f.read_text(), f


def test_no_logs_are_saved_when_secrets_cannot_be_read(fake_api, tmp_path):
    fake_api.secrets_fail = True
    errors = collect(client.ApiClient(), "ns", tmp_path)
    assert not (tmp_path / "logs").exists() and (tmp_path / "pods.yaml").exists()
    assert any("logs: not saved" in e for e in errors)
