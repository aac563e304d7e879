"""Fixtures only the RayService tests need: the Gateway API implementation for incremental upgrades."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import gateway as gw
from rayconformance.fixtures import ray
from rayconformance.fixtures.providers import images_of


@pytest.fixture(scope="session")
def gateway(k8s, operator, provider, timeouts, conformance_options):
    """`gateway()` installs a real Gateway implementation (Traefik) on first use in this session and returns
    its GatewayInfo. Called from the test body, so a cluster without the Gateway API fails the test that
    needs it (naming what is missing) instead of erroring in setup."""
    installed = []

    def get() -> gw.GatewayInfo:
        if not installed:
            if provider.supports("load_images"):  # e.g. the local bed builds Traefik on first use
                provider.load_images(images_of(ray.load_sample(gw.SAMPLE)))
            (conformance_options.run_dir / gw.INSTALLED_MARKER).touch()  # the run's teardown removes it
            installed.append(gw.install(k8s, timeouts.medium))
        return installed[0]

    return get  # the run's teardown removes what was installed (in the controller, after every worker is done)
