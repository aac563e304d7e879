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


HEAD = """apiVersion: rayconformance.io/v1alpha1
kind: OperatorProfile
name: custom
implementation: {organization: o, project: p, url: https://example.invalid, version: v1}
features: []
"""


def parse(extra: str):
    import yaml
    from pathlib import Path

    return profiles.parse(yaml.safe_load(HEAD + extra), Path("custom.yaml"))


def test_ray_versions_default_first_and_old_key_read_as_one():
    p = parse('rayVersions: ["2.60.0", "2.46.0"]\n')
    assert (p.ray_version, p.ray_versions) == ("2.60.0", ("2.60.0", "2.46.0"))
    p = parse('rayVersion: "2.46.0"\n')
    assert (p.ray_version, p.ray_versions) == ("2.46.0", ("2.46.0",))
    assert parse("").ray_versions == () and parse("").ray_version is None


@pytest.mark.parametrize("extra, expected", [
    ('rayVersions: ["2.60.0"]\nrayVersion: "2.46.0"\n', "set 'rayVersions' (a list, default first) or the older"),
    ("rayVersions: []\n", "'rayVersions' must be a non-empty list"),
    ("rayVersions: 2.60.0\n", "'rayVersions' must be a non-empty list"),
    ("rayVersions: [2.60]\n", "'rayVersions' has '2.6', not a Ray release"),
    ('rayVersion: "latest"\n', "'rayVersion' has 'latest', not a Ray release"),
    ('rayVersions: ["2.60.0", "2.60.0"]\n', "names a Ray version twice"),
])
def test_bad_ray_versions_are_one_line(extra, expected):
    with pytest.raises(profiles.ProfileError) as e:
        parse(extra)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_shipped_kuberay_profiles_default_to_ray_2_60():
    for name in profiles.known():
        p = profiles.load(name)
        if name.startswith("kuberay-"):
            assert p.ray_version == "2.60.0" and "2.46.0" in p.ray_versions, name
