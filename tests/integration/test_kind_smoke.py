"""kind smoke test (`make test-kind`; skipped unless RAYCONF_KIND_SMOKE=1): kind-cpu comes up through the kind
provider (on the project's own engine where no Docker runs, from the offline images of `make kind-images`), the
default profile's KubeRay is installed and one RayCluster is provisioned; kind's default StorageClass binds a claim
and a Pod writes to it; the engine's network namespace has no
default route (nothing it runs can leave the machine); after `down()` nothing of an engine the provider started is
left (no engine process, no network namespace)."""
from __future__ import annotations

import os
import subprocess

import pytest
from kubernetes import client

from rayconformance.testing import ray
from rayconformance.testing.expect.raycluster import raycluster_must_be_provisioned
from rayconformance.testing.waiting import wait_until
from rayconformance.kube.client import api_client
from rayconformance.operator import installer, profiles
from rayconformance.providers import make_provider
from rayconformance.providers.kind import PROJECT

pytestmark = pytest.mark.skipif(os.environ.get("RAYCONF_KIND_SMOKE") != "1",
                                reason="the kind smoke test runs with `make test-kind`")


def engine_leftovers() -> list[str]:
    netns = subprocess.run(["ip", "netns", "pids", "rayconf-engine"], capture_output=True, text=True).stdout.split()
    named = "rayconf-engine" in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [f"pid {p}" for p in netns] + (["netns rayconf-engine"] if named else [])


def claim_must_bind_and_take_a_write(api, ns: str, image: str, timeout: float = 300) -> None:
    """As on any kind cluster: the default StorageClass is local-path's; a claim on it binds once a Pod uses it,
    and the Pod writes to the volume."""
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    default = [(c.metadata.name, c.provisioner) for c in storage.list_storage_class().items
               if (c.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert default == [("standard", "rancher.io/local-path")], f"expected kind's default class, found {default}"
    core.create_namespaced_persistent_volume_claim(ns, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    core.create_namespaced_pod(ns, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "writer"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "c", "image": image, "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", "echo kept > /data/f && cat /data/f"],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}]}})
    phase = wait_until(lambda: core.read_namespaced_pod("writer", ns).status.phase,
                       lambda p: p in ("Succeeded", "Failed"), "the writer Pod to finish (its volume provisioned first)",
                       timeout)
    claim = core.read_namespaced_persistent_volume_claim("claim", ns).status.phase
    assert (phase, claim) == ("Succeeded", "Bound"), \
        f"expected the writer Succeeded on a Bound claim within {timeout:.0f}s, saw Pod {phase}, claim {claim}"
    assert core.read_namespaced_pod_log("writer", ns, container="c").strip() == "kept"


def test_kind_cpu_provisions_a_raycluster(tmp_path):
    provider = make_provider("kind", "kind-cpu", tmp_path)
    try:
        cluster = provider.up()
        if provider.engine == PROJECT:  # the network guard: the engine's namespace has no way off the machine
            routes = subprocess.run(["ip", "-n", "rayconf-engine", "route", "show", "default"], capture_output=True,
                                    text=True, check=True).stdout
            assert routes.strip() == "", f"the engine's network namespace has a default route: {routes}"
        if provider._engine_cgroup_version() == "1":  # the nodes' kubelet and runc on cgroupfs (providers/kind.py)
            node = f"{cluster.name}-control-plane"
            kubelet = provider._run("docker", "exec", node, "cat", "/var/lib/kubelet/config.yaml")
            containerd = provider._run("docker", "exec", node, "cat", "/etc/containerd/config.toml")
            assert "cgroupDriver: cgroupfs" in kubelet and "SystemdCgroup = false" in containerd, \
                f"expected kubelet and containerd on cgroupfs (cgroup v1):\n{kubelet}\n{containerd}"
        profile = profiles.load("kuberay-v1.6.1")
        provider.load_images([f"rayproject/ray:{profile.ray_version}"])  # the sample's image, as the suite loads it
        installer.install(profile, cluster, tmp_path / "operator", provider)
        api = api_client(cluster.kubeconfig)
        body = ray.sample("raycluster-basic", profile.ray_version, kind="RayCluster")
        ray.RayResources(api, "default", "RayCluster").create(body)
        raycluster_must_be_provisioned(api, "default", body["metadata"]["name"], timeout=600)
        provider.load_images(["busybox:1.36"])
        claim_must_bind_and_take_a_write(api, "default", "busybox:1.36")
        started_engine = provider.engine == PROJECT and provider.engine_started
    finally:
        provider.down()
    if started_engine:
        assert engine_leftovers() == []
