"""kind smoke test (`make test-kind`; skipped unless RAYCONF_KIND_SMOKE=1): kind-cpu comes up through the kind
provider (on the project's own engine where no Docker runs, from the offline images of `make kind-images`), the
default profile's KubeRay is installed and one RayCluster is provisioned; the engine's network namespace has no
default route (nothing it runs can leave the machine); after `down()` nothing of an engine the provider started is
left (no engine process, no network namespace)."""
from __future__ import annotations

import os
import subprocess

import pytest

from rayconformance.fixtures import operator, profiles, ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned
from rayconformance.fixtures.kube import api_client
from rayconformance.fixtures.providers import make_provider
from rayconformance.fixtures.providers.kind import PROJECT

pytestmark = pytest.mark.skipif(os.environ.get("RAYCONF_KIND_SMOKE") != "1",
                                reason="the kind smoke test runs with `make test-kind`")


def engine_leftovers() -> list[str]:
    netns = subprocess.run(["ip", "netns", "pids", "rayconf-engine"], capture_output=True, text=True).stdout.split()
    named = "rayconf-engine" in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [f"pid {p}" for p in netns] + (["netns rayconf-engine"] if named else [])


def test_kind_cpu_provisions_a_raycluster(tmp_path):
    provider = make_provider("kind", "kind-cpu", tmp_path)
    try:
        cluster = provider.up()
        if provider.engine == PROJECT:  # the network guard: the engine's namespace has no way off the machine
            routes = subprocess.run(["ip", "-n", "rayconf-engine", "route", "show", "default"], capture_output=True,
                                    text=True, check=True).stdout
            assert routes.strip() == "", f"the engine's network namespace has a default route: {routes}"
        profile = profiles.load("kuberay-v1.6.1")
        operator.install(profile, cluster, tmp_path / "operator", provider)
        api = api_client(cluster.kubeconfig)
        body = ray.sample("raycluster-basic", profile.ray_version, kind="RayCluster")
        ray.RayResources(api, "default", "RayCluster").create(body)
        raycluster_must_be_provisioned(api, "default", body["metadata"]["name"], timeout=600)
        started_engine = provider.engine == PROJECT and provider.engine_started
    finally:
        provider.down()
    if started_engine:
        assert engine_leftovers() == []
