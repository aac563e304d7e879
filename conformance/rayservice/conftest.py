"""Fixtures only the RayService tests need: the Gateway API implementation for incremental upgrades, and the
operator swapped for an earlier release (per `operatorUpgradeFrom`) for the operator-upgrade test."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import gateway as gw
from rayconformance.fixtures import ray


@pytest.fixture(scope="session")
def gateway(k8s, operator, provider, timeouts, conformance_options):
    """`gateway()` installs a real Gateway implementation (Traefik) on first use in this session and returns
    its GatewayInfo. Called from the test body, so a cluster without the Gateway API fails the test that
    needs it (naming what is missing) instead of erroring in setup."""
    installed = []

    def get() -> gw.GatewayInfo:
        if not installed:
            provider.prepare_images(ray.load_sample(gw.SAMPLE))  # e.g. the local bed builds Traefik on first use
            (conformance_options.run_dir / gw.INSTALLED_MARKER).touch()  # the run's teardown removes it
            installed.append(gw.install(k8s, timeouts.medium))
        return installed[0]

    return get  # the run's teardown removes what was installed (in the controller, after every worker is done)


def pytest_generate_tests(metafunc):
    """A test taking `upgrade_source` runs once per profile the operator profile is upgraded from
    (`operatorUpgradeFrom`), named after it; with none it runs once with None (and skips)."""
    if "upgrade_source" not in metafunc.fixturenames:
        return
    from pathlib import Path

    from rayconformance.fixtures.run import current

    run = current(metafunc.config)
    sources = list(run.options.profile.upgrade_from) if run else []
    if sources:
        metafunc.parametrize("upgrade_source", sources, ids=[Path(s).name.removesuffix(".yaml").removesuffix(".yml")
                                                             for s in sources])


@pytest.fixture
def upgrade_source():
    """No earlier release to upgrade from (the profile names no operatorUpgradeFrom)."""
    return None


@pytest.fixture
def operator_release_swap(k8s, operator, provider, cluster, conformance_options):
    """Swaps the operator under test for an earlier release and back (fixtures/operator/release_swap.py); whatever the
    test did, the session's operator install is back in place when it is over. None when the suite did not
    install the operator (nothing to swap back to)."""
    from rayconformance.fixtures.operator.release_swap import ReleaseSwap

    swap = ReleaseSwap.for_session(k8s, provider, cluster.provider, operator.profile, conformance_options.run_dir,
                                   conformance_options.timeout_scale)
    try:
        yield swap
    finally:
        if swap is not None:
            swap.restore()
