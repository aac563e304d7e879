"""Fixtures only the RayService tests need: the Gateway API implementation for incremental upgrades."""
from __future__ import annotations

import pytest

from fixtures import gateway


@pytest.fixture(scope="session")
def gateway_class(k8s, operator, timeouts, pytestconfig):
    """GatewayInfo of a real Gateway implementation (Traefik) installed for this session."""
    info = gateway.install(k8s, timeouts.medium)
    yield info
    if not hasattr(pytestconfig, "workerinput"):  # under xdist the cluster's teardown removes it
        gateway.uninstall(k8s)
