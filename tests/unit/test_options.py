"""Options: defaults, options file and command-line precedence, and one-line errors for bad input."""
from __future__ import annotations

import pytest

from rayconformance import features
from rayconformance.plugin.wiring import RUN

from .conftest import usage_error


def options_of(pytester: pytest.Pytester, *args: str):
    config = pytester.parseconfigure("conformance", *args)
    return config.stash[RUN].options


def test_defaults(suite, pytester):
    o = options_of(pytester)
    assert (o.provider, o.cluster_name, o.profile.name, o.mode) == ("local", "local-gpu", "kuberay-v1.6.1", "default")
    assert o.timeout_scale == 1.0 and not o.keep_resources and o.skip_tests == () and o.run_test == ()
    assert o.supported == frozenset(o.profile.features) and o.claimed_by == "profile kuberay-v1.6.1"
    assert o.run_dir.parent == pytester.path / "reports"
    assert o.implementation["project"] == "kuberay"


def test_command_line_beats_options_file_beats_defaults(suite, pytester):
    pytester.makefile(".yaml", opts="provider: existing\ntimeout-scale: 2\nmode: gpu-nodes\n"
                                    "supported-features: [RayClusterProvisioning, RayJobK8sJobMode]\n"
                                    "report-contact: '@a,@b'\n")
    o = options_of(pytester, "--conformance-options-file=opts.yaml", "--timeout-scale=3",
                   "--supported-features=RayClusterSuspend")
    assert o.provider == "existing" and o.mode == "gpu-nodes"  # file over defaults
    assert o.timeout_scale == 3.0 and o.supported == {"RayClusterSuspend"}  # command line over file
    assert o.claimed_by == "--supported-features"
    assert o.implementation["contact"] == ["@a", "@b"] and o.implementation["organization"] == "ray-project"


def test_provider_and_cluster_definition_pick_each_other(suite, pytester):
    assert (options_of(pytester, "--provider=kind").cluster_name) == "kind-cpu"
    assert (options_of(pytester, "--cluster=kind-gpu").provider) == "kind"
    assert (options_of(pytester, "--provider=existing").definition) is None


def test_all_features_and_exemptions(suite, pytester):
    o = options_of(pytester, "--all-features", "--exempt-features=RayClusterSuspend,RayJobSuspend")
    assert o.supported == set(features.NAMES) - {"RayClusterSuspend", "RayJobSuspend"} - set(o.profile.lacks)


def test_all_features_leave_out_what_the_release_lacks(suite, pytester):
    from rayconformance.operator import profiles

    o = options_of(pytester, "--all-features", "--operator-profile=kuberay-v1.4.2")
    lacks = set(profiles.load("kuberay-v1.4.2").lacks)
    assert "RayJobSidecarMode" in lacks and o.supported == set(features.NAMES) - lacks
    assert "RayClusterAutoscalerV1" in o.supported  # the release has it, broken: not claimed, not lacked
    assert o.lacked == lacks
    assert "lacks its API" in features.skip_reason(["RayJobSidecarMode"], o.supported, o.exempt, o.claimed_by,
                                                   o.lacked)


PROFILE = """apiVersion: rayconformance.io/v1alpha1
kind: OperatorProfile
name: custom
implementation: {organization: o, project: p, url: https://example.invalid, version: v1}
features: [RayClusterProvisioning]
"""


@pytest.mark.parametrize("args, profile, expected", [
    (["--provider=nope"], None, "unknown provider 'nope'; use --provider with one of: existing, kind, local"),
    (["--supported-features=RayClusterProvisioning,Teleport"], None,
     "unknown feature(s) Teleport in --supported-features; valid features: RayClusterProvisioning,"),
    (["--exempt-features=Teleport"], None, "unknown feature(s) Teleport in --exempt-features"),
    (["--operator-profile=nope"], None, "operator profile 'nope' not found"),
    (["--operator-profile=custom.yaml"], "name: [unclosed", "is not valid YAML"),
    (["--operator-profile=custom.yaml"], PROFILE + "colour: blue\n",
     "unknown key 'colour' in the top level; allowed keys: apiVersion, kind, name"),
    (["--operator-profile=custom.yaml"], PROFILE.replace("version: v1}", "version: v1, vendor: x}"),
     "unknown key 'vendor' in implementation; allowed keys: organization, project, url, version, contact"),
    (["--operator-profile=custom.yaml"], PROFILE + "featureGates: {RayClusterStatusConditions: 'yes'}\n",
     "featureGates.RayClusterStatusConditions must be true or false"),
    (["--operator-profile=custom.yaml"], PROFILE + "install: {docker: {}}\n", "unknown key 'docker' in install"),
    (["--operator-profile=custom.yaml"], PROFILE.replace("[RayClusterProvisioning]", "[Teleport]"),
     "unknown feature(s) Teleport in features; valid features:"),
    (["--operator-profile=custom.yaml"], PROFILE.replace("name: custom\n", ""), "missing required key 'name'"),
    (["--operator-profile=custom.yaml", "--provider=local"], PROFILE + "install: {local: {manifests: [op.yaml]}}\n",
     "install.local.manifests: "),
    (["--timeout-scale=0"], None, "--timeout-scale must be a number > 0, got '0'"),
    (["--diagnostics=some"], None, "--diagnostics some: use one of evidence, full, failed"),
    (["--timeout-scale=fast"], None, "--timeout-scale must be a number > 0, got 'fast'"),
    (["--run-id=a/b"], None, "--run-id 'a/b' is not usable"),
    (["--run-id=published"], None, "--run-id published: reports/published/ holds published runs"),
    (["--provider=kind", "--cluster=local-cpu"], None,
     "cluster definition 'local-cpu' is for provider 'local', not 'kind'"),
    (["--cluster=nowhere"], None, "cluster definition 'nowhere' not found"),
    (["--conformance-options-file=missing.yaml"], None, "options file missing.yaml not found"),
    (["--ray-version=2.99.0"], None, "--ray-version 2.99.0 is not supported by operator profile kuberay-v1.6.1; "
                                     "it supports Ray 2.60.0, 2.46.0 (rayVersions in "),
    (["--ray-version=latest"], None, "--ray-version 'latest' is not a Ray release (MAJOR.MINOR.PATCH, e.g. 2.60.0)"),
    (["--operator-profile=custom.yaml", "--ray-version=2.46.0"], PROFILE + 'rayVersions: ["2.60.0"]\n',
     "--ray-version 2.46.0 is not supported by operator profile custom; it supports Ray 2.60.0"),
])
def test_bad_input_is_one_line_without_traceback(suite, pytester, args, profile, expected):
    if profile is not None:
        suite.profile("custom", profile)
    suite.tests()
    line = usage_error(suite.run(*args))
    assert expected in line
    assert suite.provider_calls() == []


def test_unknown_key_in_options_file(suite, pytester):
    pytester.makefile(".yaml", opts="provdier: local\n")
    line = usage_error(suite.run("--conformance-options-file=opts.yaml"))
    assert "unknown key 'provdier' in options file opts.yaml; allowed keys: provider, cluster" in line


def test_an_options_file_is_checked_against_its_schema(suite, pytester):
    pytester.makefile(".yaml", opts="run-id: {a: 1}\n")
    line = usage_error(suite.run("--conformance-options-file=opts.yaml"))
    assert "options file opts.yaml: run-id: {'a': 1} is not of type 'string', 'number', 'null'" in line, line
    assert "(its schema: python -m rayconformance schema options)" in line


def test_the_schemas_of_the_files_a_user_writes_are_printed(capsys):
    import json

    from rayconformance.__main__ import main

    for which, key in (("profile", "implementation"), ("options", "operator-profile"), ("cluster", "provider"),
                       ("report", "suiteVersion")):
        assert main(["schema", which]) == 0
        assert key in json.loads(capsys.readouterr().out)["properties"], which


def test_missing_profile_lists_where_profiles_live_and_known_ones(suite, pytester):
    line = usage_error(suite.run("--operator-profile=nope"))
    assert "profiles live in" in line and "known: " in line and "none" in line


def test_runs_outside_conformance_ignore_the_plugin(pytester):
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_plain="def test_ok(): pass")
    result = pytester.runpytest("--operator-profile=nope")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


def test_ray_version_defaults_to_the_profiles_first_and_picks_another(suite, pytester):
    assert options_of(pytester).ray_version == "2.60.0"
    assert options_of(pytester, "--ray-version=2.46.0").ray_version == "2.46.0"
    pytester.makefile(".yaml", opts="ray-version: 2.46.0\n")
    assert options_of(pytester, "--conformance-options-file=opts.yaml").ray_version == "2.46.0"


def test_ray_version_of_a_profile_naming_none_is_taken_as_given(suite, pytester):
    suite.profile("custom", PROFILE)
    assert options_of(pytester, "--operator-profile=custom.yaml").ray_version is None
    assert options_of(pytester, "--operator-profile=custom.yaml", "--ray-version=2.52.0").ray_version == "2.52.0"


def test_features_needing_a_newer_ray_are_not_supported_at_an_older_one(suite, pytester):
    assert "RayClusterTokenAuth" in options_of(pytester).supported  # the default, Ray 2.60.0
    old = options_of(pytester, "--ray-version=2.46.0")
    assert "RayClusterTokenAuth" in old.profile.features and "RayClusterTokenAuth" not in old.supported
    assert "RayClusterTokenAuth" not in options_of(pytester, "--ray-version=2.46.0", "--all-features").supported


def test_attach_kubeconfig_takes_an_existing_file_and_an_adopting_provider(suite, pytester):
    suite.tests()
    assert "no such file" in usage_error(suite.run("--attach-kubeconfig=bed.kubeconfig"))
    (pytester.path / "bed.kubeconfig").write_text("apiVersion: v1\n")
    assert "--attach-kubeconfig: provider kind cannot attach" in usage_error(
        suite.run("--provider=kind", "--attach-kubeconfig=bed.kubeconfig"))
    assert options_of(pytester, "--attach-kubeconfig=bed.kubeconfig").attach_kubeconfig == \
        pytester.path / "bed.kubeconfig"


def test_attach_kubeconfig_uses_the_local_bed_where_docker_answers_too(suite, pytester, monkeypatch):
    """Where a Docker engine answers, the provider by default is kind; a run attached to a local bed is local."""
    from rayconformance import providers

    monkeypatch.setattr(providers, "default_provider", lambda: ("kind", "a Docker engine answers at /x"))
    suite.tests()
    (pytester.path / "kc").write_text("apiVersion: v1\n")
    result = pytester.runpytest("conformance", "--collect-only", "--attach-kubeconfig=kc", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["rayconformance: provider local (--attach-kubeconfig: a local bed that is up)*"])
    result = pytester.runpytest("conformance", "--collect-only", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["rayconformance: provider kind (a Docker engine answers at /x)*"])
