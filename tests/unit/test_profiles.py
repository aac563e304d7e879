"""Operator profiles: every shipped profile is valid."""
from __future__ import annotations

import pytest

from rayconformance.operator import profiles


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


@pytest.mark.parametrize("install, expected", [
    ("{local: {image: a:b, wait: true}}", "install.local: unknown key(s) wait (allowed: source, manifests, helm,"),
    ("{local: {helm: {chart: c, crds: sometimes}}}", "install.local.helm.crds must be one of apply, helm, skip"),
    ("{local: {helm: {chart: c}, args: [--x]}}", "install.local.args cannot be passed through a chart"),
    ("{kind: {source: {name: kuberay}}}", "install.kind.source: a released source takes name, version, patch "
                                          "(missing version)"),
    ("{local: {readyTimeoutSeconds: soon}}", "install.local.readyTimeoutSeconds must be a number of seconds"),
    ("{local: {manifests: config/default}}", "install.local.manifests must be a list of strings"),
    ("{local: {env: [A]}}", "install.local.env must be a mapping"),
    ("{local: {helm: {chart: c, repository: 5, version: 1}}}", "install.local.helm.repository: 5 is not of type "
                                                               "'string', 'null' (the profile's schema: "),
])
def test_a_bad_install_section_stops_the_load_in_one_line(install, expected):
    """The install sections are typed when the profile loads: a run stops before bring-up, naming the key."""
    with pytest.raises(profiles.ProfileError) as e:
        parse(f"install: {install}\n")
    assert expected in str(e.value) and "\n" not in str(e.value) and "profiles/template.yaml" in str(e.value)


def test_an_install_section_is_typed_with_its_defaults():
    spec = parse("install: {local: {source: {name: kuberay, version: v1.6.1}, manifests: [config/default]}}\n"
                 ).install["local"]
    assert (spec.source.version, spec.source.is_tree, spec.manifests) == ("v1.6.1", False, ("config/default",))
    assert (spec.namespace, spec.deployment, spec.helm, spec.ready_timeout_seconds) == ("ray-system", None, None, 300)


def test_shipped_kuberay_profiles_default_to_ray_2_60():
    for name in profiles.known():
        p = profiles.load(name)
        if name.startswith("kuberay-"):
            assert p.ray_version == "2.60.0" and "2.46.0" in p.ray_versions, name


def test_operator_upgrade_from_one_or_a_list_of_profiles():
    assert parse("operatorUpgradeFrom: kuberay-v1.5.1\n").upgrade_from == ("kuberay-v1.5.1",)
    assert parse("operatorUpgradeFrom: [kuberay-v1.5.1, kuberay-v1.6.0]\n").upgrade_from == (
        "kuberay-v1.5.1", "kuberay-v1.6.0")
    assert parse("").upgrade_from == ()
    p = profiles.load("kuberay-v1.6.1")
    assert p.upgrade_from == ("kuberay-v1.5.1",)
    assert profiles.upgrade_source(p.path, "kuberay-v1.5.1") == profiles.PROFILES_DIR / "kuberay-v1.5.1.yaml"


def test_operator_upgrade_from_a_path_is_relative_to_the_profile(tmp_path):
    import shutil

    shutil.copy(profiles.PROFILES_DIR / "kuberay-v1.5.1.yaml", tmp_path / "old.yaml")
    (tmp_path / "new.yaml").write_text(HEAD + "operatorUpgradeFrom: [old.yaml]\n")
    p = profiles.load(str(tmp_path / "new.yaml"))
    assert profiles.upgrade_source(p.path, "old.yaml") == tmp_path / "old.yaml"
    assert profiles.load(str(profiles.upgrade_source(p.path, "old.yaml"))).name == "kuberay-v1.5.1"


@pytest.mark.parametrize("extra, expected", [
    ("operatorUpgradeFrom: kuberay-v0.9\n", "'operatorUpgradeFrom' names 'kuberay-v0.9', which is no profile"),
    ("operatorUpgradeFrom: [1.5]\n", "'operatorUpgradeFrom' must be a profile name (or a list of them)"),
    ("operatorUpgradeFrom: {from: kuberay-v1.5.1}\n", "'operatorUpgradeFrom' must be a profile name"),
    ('operatorUpgradeFrom: [""]\n', "'operatorUpgradeFrom' must be a profile name"),
    ("operatorUpgradeFrom: [custom.yaml]\n", "this profile itself"),
    ("operatorUpgradeFrom: [kuberay-v1.5.1, kuberay-v1.5.1]\n", "names a profile twice"),
    ("features: [RayServiceOperatorUpgrade]\n", "claims RayServiceOperatorUpgrade but names no 'operatorUpgradeFrom'"),
    ("lacks: RayServiceSuspend\n", "'lacks' must be a list of feature names"),
    ("lacks: [RayServiceSuspnd]\n", "RayServiceSuspnd"),
    ("lacks: [RayClusterSuspend]\nfeatures: [RayClusterSuspend]\n", "it claims RayClusterSuspend, which it also lists"),
])
def test_bad_operator_upgrade_from_or_lacks_is_one_line(extra, expected, tmp_path):
    import yaml

    raw = yaml.safe_load(HEAD.replace("features: []\n", "") + extra)
    raw.setdefault("features", [])
    (tmp_path / "custom.yaml").write_text(HEAD)
    with pytest.raises(profiles.ProfileError) as e:
        profiles.parse(raw, tmp_path / "custom.yaml")
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_a_release_lacks_the_features_added_after_it():
    assert "RayServiceSuspend" in profiles.load("kuberay-v1.6.2").lacks
    assert "RayJobSidecarMode" in profiles.load("kuberay-v1.4.2").lacks
    assert "RayJobSidecarMode" not in profiles.load("kuberay-v1.5.0").lacks
    assert profiles.load("kuberay-v1.7.0").lacks == ()


@pytest.mark.parametrize("content, expected", [
    ("kind: Deployment\nmetadata: {name: op\n", "is not valid YAML"),
    ("apiVersion: v1\nkind: ConfigMap\n", "document 1: not a Kubernetes object (it needs apiVersion, kind and "
                                          "metadata.name)"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n- just a list\n", "document 2: not a Kubernetes"),
])
def test_a_malformed_manifest_of_the_profiles_own_is_one_line(tmp_path, content, expected):
    """A third party's operator installed from manifests of its own: a broken file is named as the run starts
    (options.py checks the provider's install), before anything is built or brought up."""
    import yaml

    (tmp_path / "operator.yaml").write_text(content)
    profile = profiles.parse(yaml.safe_load(HEAD + "install: {local: {manifests: [operator.yaml]}}\n"),
                             tmp_path / "vendor.yaml")
    with pytest.raises(profiles.ProfileError) as e:
        profiles.check_own_manifests(profile, "local")
    assert expected in str(e.value) and "operator.yaml" in str(e.value) and "\n" not in str(e.value)


def test_a_missing_manifest_of_the_profiles_own_is_one_line(tmp_path):
    import yaml

    profile = profiles.parse(yaml.safe_load(HEAD + "install: {kind: {manifests: [deploy/]}}\n"), tmp_path / "vendor.yaml")
    profiles.check_own_manifests(profile, "local")  # no install on local: nothing to check
    with pytest.raises(profiles.ProfileError) as e:
        profiles.check_own_manifests(profile, "kind")
    assert "install.kind.manifests:" in str(e.value) and "deploy not found" in str(e.value)


def test_the_schema_takes_the_nulls_the_hand_checks_take():
    p = parse("rayVersion: null\ninstall: {local: {image: null, manifests: null, args: null, namespace: null}}\n")
    assert p.install["local"].image is None and p.ray_version is None


def test_well_formed_manifests_of_the_profiles_own_load(tmp_path):
    import yaml

    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: op}\n---\n")
    p = profiles.parse(yaml.safe_load(HEAD + "install: {local: {manifests: [deploy]}}\n"), tmp_path / "vendor.yaml")
    profiles.check_own_manifests(p, "local")
    assert p.install["local"].manifests == ("deploy",)
