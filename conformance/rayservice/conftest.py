"""Fixtures only the RayService tests need: the Gateway API implementation for incremental upgrades."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import gateway as gw
from rayconformance.fixtures import ray
from rayconformance.fixtures.providers import images_of


@pytest.fixture(scope="session")
def gateway(k8s, operator, provider, timeouts, pytestconfig):
    """`gateway()` installs a real Gateway implementation (Traefik) on first use in this session and returns
    its GatewayInfo. Called from the test body, so a cluster without the Gateway API fails the test that
    needs it (naming what is missing) instead of erroring in setup."""
    attempted, installed = [], []

    def get() -> gw.GatewayInfo:
        if not installed:
            attempted.append(True)
            if provider.supports("load_images"):  # e.g. the local bed builds Traefik on first use
                provider.load_images(images_of(ray.load_sample(gw.SAMPLE)))
            installed.append(gw.install(k8s, timeouts.medium))
        return installed[0]

    yield get
    if attempted and not hasattr(pytestconfig, "workerinput"):  # under xdist the cluster's teardown removes it
        gw.uninstall(k8s)
