"""`make conformance` makes only the Ray virtualenv its run uses: read from the suite options as the run reads them."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import providers, setup_needs


@pytest.fixture(autouse=True)
def no_docker(monkeypatch):
    monkeypatch.setattr(providers, "default_provider", lambda: ("local", "no Docker engine answers"))


def test_the_default_profiles_first_ray_version_on_the_local_bed():
    assert setup_needs.ray_venvs([]) == ["2.60.0"]
    assert setup_needs.ray_venvs(["-k", "provisioning", "--core-only"]) == ["2.60.0"]


def test_the_runs_ray_version_wins():
    assert setup_needs.ray_venvs(["--ray-version=2.46.0"]) == ["2.46.0"]
    assert setup_needs.ray_venvs(["--operator-profile", "kuberay-v1.5.1", "--ray-version", "2.46.0"]) == ["2.46.0"]


def test_none_off_the_local_bed(monkeypatch):
    assert setup_needs.ray_venvs(["--provider", "kind"]) == []
    assert setup_needs.ray_venvs(["--cluster", "kind-gpu"]) == []
    assert setup_needs.ray_venvs(["--provider", "existing"]) == []
    monkeypatch.setattr(providers, "default_provider", lambda: ("kind", "a Docker engine answers"))
    assert setup_needs.ray_venvs([]) == []
    assert setup_needs.ray_venvs(["--attach-kubeconfig", "kc"]) == ["2.60.0"]


def test_the_options_file_counts_and_the_command_line_wins(tmp_path):
    f = tmp_path / "opts.yaml"
    f.write_text("ray-version: 2.46.0\nprovider: local\n")
    assert setup_needs.ray_venvs([f"--conformance-options-file={f}"]) == ["2.46.0"]
    assert setup_needs.ray_venvs([f"--conformance-options-file={f}", "--ray-version", "2.60.0"]) == ["2.60.0"]


def test_bad_input_is_one_line(capsys):
    assert setup_needs.main(["ray-venvs", "--operator-profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("setup_needs: operator profile 'nope' not found") and err.count("\n") == 1
    assert setup_needs.main(["what"]) == 2


def test_what_a_run_builds_when_it_brings_the_local_bed_up():
    full = ["localpath", "kuberay@v1.6.1", "kuberay@v1.5.1", "traefik"]  # v1.5.1: the release it upgrades from
    assert setup_needs.bring_up_builds([]) == full
    assert setup_needs.bring_up_builds(["--core-only"]) == ["localpath", "kuberay@v1.6.1"]
    assert setup_needs.bring_up_builds(["--exempt-features", "RayServiceOperatorUpgrade"]) == \
        ["localpath", "kuberay@v1.6.1", "traefik"]
    assert setup_needs.bring_up_builds(["--supported-features=RayServiceIncrementalRollback"]) == \
        ["localpath", "kuberay@v1.6.1", "traefik"]
    assert setup_needs.bring_up_builds(["--operator-profile", "kuberay-v1.7.0"])[:2] == ["localpath", "kuberay@v1.6.2"]
    assert setup_needs.bring_up_builds(["--provider", "kind"]) == []


def test_the_gateway_features_are_those_of_the_tests_using_the_gateway():
    """FIXTURE_FEATURES names exactly the features of the conformance tests that take the `gateway` fixture."""
    import ast
    from pathlib import Path

    from rayconformance.fixtures.context import FIXTURE_FEATURES

    found = set()
    for path in (Path(__file__).resolve().parents[2] / "conformance").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "gateway" in [a.arg for a in node.args.args]:
                found |= {a.value for d in node.decorator_list if isinstance(d, ast.Call)
                          and getattr(d.func, "attr", "") == "feature" for a in d.args if isinstance(a, ast.Constant)}
    assert found == set(FIXTURE_FEATURES["gateway"])
