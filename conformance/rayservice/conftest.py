"""Fixtures only the RayService tests need: the Gateway API implementation for incremental upgrades, and the
operator swapped for an earlier release (per `operatorUpgradeFrom`) for the operator-upgrade test."""
from __future__ import annotations

from typing import NamedTuple

import pytest

from rayconformance.testing import gateway as gw


@pytest.fixture(scope="session")
def gateway(k8s, operator, timeouts, conformance_options):
    """`gateway()` installs a real Gateway implementation (Traefik) on first use in this session and returns
    its GatewayInfo. Called from the test body, so a cluster without the Gateway API fails the test that
    needs it (naming what is missing) instead of erroring in setup. Its images are prepared before the first
    test (the fixture declares its sample, testing.context.FIXTURE_SAMPLES)."""
    installed = []

    def get() -> gw.GatewayInfo:
        if not installed:
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

    from rayconformance.run.state import current

    run = current(metafunc.config)
    sources = list(run.options.profile.upgrade_from) if run else []
    if sources:
        metafunc.parametrize("upgrade_source", sources, ids=[Path(s).name.removesuffix(".yaml").removesuffix(".yml")
                                                             for s in sources])


@pytest.fixture
def upgrade_source():
    """No earlier release to upgrade from (the profile names no operatorUpgradeFrom)."""
    return None


class ReleaseSwapFrom(NamedTuple):
    """The swap of the operator under test (rayconformance.operator.ReleaseSwap) and the profile of the earlier release
    it is upgraded from."""
    swap: object
    previous: object


@pytest.fixture
def operator_release_swap(k8s, operator, provider, cluster, conformance_options, upgrade_source):
    """Swaps the operator under test for the earlier release `upgrade_source` and back: a ReleaseSwapFrom. Whatever
    the test did, the session's operator install is back in place when it is over. Skips the test when the profile
    names no release to upgrade from, or when the suite did not install the operator (nothing to swap back to)."""
    from rayconformance.operator import profiles
    from rayconformance.operator.release_swap import ReleaseSwap

    if upgrade_source is None:
        pytest.skip(f"operator profile {operator.profile.name} names no operatorUpgradeFrom (the release it is "
                    f"upgraded from)")
    swap = ReleaseSwap.for_session(k8s, provider, cluster.provider, operator.profile, conformance_options.run_dir,
                                   conformance_options.timeout_scale, conformance_options.operator_tree)
    if swap is None:
        pytest.skip("the suite did not install the operator (no install section for this provider), so it cannot "
                    "put an earlier release in its place")
    previous = profiles.load(str(profiles.upgrade_source(operator.profile.path, upgrade_source)))
    try:
        yield ReleaseSwapFrom(swap, previous)
    finally:
        swap.restore()
