"""Operator profiles: every shipped profile is valid."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import profiles


@pytest.mark.parametrize("name", profiles.known())
def test_shipped_profiles_load(name):
    profile = profiles.load(name)
    assert profile.implementation["version"]


def test_none_claims_nothing_and_installs_nothing():
    profile = profiles.load("none")
    assert profile.features == () and profile.install == {}
