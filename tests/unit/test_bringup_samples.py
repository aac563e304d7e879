"""A selected test declaring a sample that is not there stops the run before bring-up in one line, also under
pytest-xdist, where the workers collect and only the controller may stop the run."""
from __future__ import annotations

import pytest

from .conftest import usage_error

MISSING_SAMPLE = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.samples("no-such-sample")
def test_provisioning(cluster):
    """A RayCluster comes up."""
'''


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_missing_sample_is_one_line_before_bring_up(suite, xdist):
    suite.tests(MISSING_SAMPLE)
    error = usage_error(suite.run_subprocess(*xdist, "--supported-features=RayClusterProvisioning"))
    assert "no-such-sample.yaml not found (declared by a selected test's @pytest.mark.samples)" in error, error
    assert suite.provider_calls() == []
