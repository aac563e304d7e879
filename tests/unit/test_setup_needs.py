"""`make conformance` makes only the Ray virtualenv its run uses: read from the suite options as the run reads them."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rayconformance import providers
from rayconformance.run import setup_needs


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

    from rayconformance.testing.context import FIXTURE_FEATURES

    found = set()
    for path in (Path(__file__).resolve().parents[2] / "conformance").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "gateway" in [a.arg for a in node.args.args]:
                found |= {a.value for d in node.decorator_list if isinstance(d, ast.Call)
                          and getattr(d.func, "attr", "") == "feature" for a in d.args if isinstance(a, ast.Constant)}
    assert found == set(FIXTURE_FEATURES["gateway"])


def on_docker(monkeypatch, answers: bool):
    monkeypatch.setattr(providers, "docker_answers", lambda: "/var/run/docker.sock" if answers else None)
    monkeypatch.setattr(providers, "default_provider", lambda: ("kind", "") if answers else ("local", ""))


LOCAL_BED = ["etcd", "kubernetes", "coredns", "gatewayapi"]


def test_the_local_bed_builds_its_base(monkeypatch):
    for docker in (False, True):
        on_docker(monkeypatch, docker)
        assert setup_needs.bed_builds(["--provider", "local"]) == LOCAL_BED
        assert setup_needs.bed_builds(["--cluster=local-tpu"]) == LOCAL_BED
        assert setup_needs.bed_builds(["--attach-kubeconfig", "kc"]) == LOCAL_BED
    on_docker(monkeypatch, False)
    assert setup_needs.bed_builds([]) == LOCAL_BED


def test_kind_on_a_docker_engine_that_answers_builds_none_of_the_local_beds_components(monkeypatch):
    on_docker(monkeypatch, True)
    assert setup_needs.bed_builds([]) == ["gatewayapi"]  # kind, picked by default
    assert setup_needs.bed_builds(["--provider", "kind", "-k", "provisioning"]) == ["gatewayapi"]
    assert setup_needs.bed_builds(["--cluster", "kind-gpu"]) == ["gatewayapi"]
    assert setup_needs.bed_builds(["--provider", "existing"]) == ["gatewayapi"]


def test_kind_on_the_projects_own_engine_builds_the_base_its_node_image_is_made_of(monkeypatch):
    on_docker(monkeypatch, False)
    assert setup_needs.bed_builds(["--provider=kind"]) == LOCAL_BED
    assert setup_needs.bed_builds(["--provider", "existing"]) == ["gatewayapi"]


def test_the_options_file_can_name_the_provider(monkeypatch, tmp_path):
    on_docker(monkeypatch, True)
    f = tmp_path / "opts.yaml"
    f.write_text("provider: local\n")
    assert setup_needs.bed_builds([f"--conformance-options-file={f}"]) == LOCAL_BED
    assert setup_needs.main(["bed-builds", "--provider", "nope"]) == 2


MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def make_vars(goal: str, conformance_args: str, docker: bool, tmp_path) -> dict[str, str]:
    """BED_BASE and BED_ASK as `make GOAL` expands them (make -n: nothing runs), with a fake docker.py answer."""
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\n{'echo /var/run/docker.sock' if docker else 'true'}\n")
    python.chmod(0o755)
    probe = tmp_path / "probe.mk"
    probe.write_text(f"include {MAKEFILE}\nprobe:\n\t@echo 'BED_BASE=$(BED_BASE)'; echo 'BED_ASK=$(BED_ASK)'\n")
    r = subprocess.run(["make", "-s", "-f", str(probe), "-C", str(MAKEFILE.parent), f"PYTHON={python}",
                        f"CONFORMANCE_ARGS={conformance_args}", f"MAKECMDGOALS={goal}", "probe"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


def test_make_asks_setup_needs_unless_the_run_can_only_be_on_the_local_bed(tmp_path):
    """Without a Docker engine or an option that could name another provider, make builds BED_BASE at once (what
    bed-builds would print); otherwise it asks; goals that are not a run (matrix, kind-images) never ask."""
    plain = make_vars("conformance", "-k provisioning --core-only", False, tmp_path)
    assert plain == {"BED_BASE": " ".join(LOCAL_BED), "BED_ASK": ""}
    assert make_vars("conformance", "", True, tmp_path)["BED_ASK"] == "ask"
    for args in ("--provider kind", "--cluster=kind-gpu", "--conformance-options-file o.yaml", "--provider=local"):
        assert make_vars("conformance-core", args, False, tmp_path)["BED_ASK"] == "ask", args
    assert make_vars("", "--provider kind", False, tmp_path)["BED_ASK"] == "ask"  # the default goal: conformance
    for goal in ("matrix", "kind-images", "test-kind", "conformance kind-images"):
        assert make_vars(goal, "--provider kind", True, tmp_path)["BED_ASK"] == "", goal


def test_make_builds_the_base_bed_builds_names_for_the_local_bed(monkeypatch, tmp_path):
    on_docker(monkeypatch, False)
    assert make_vars("conformance", "", False, tmp_path)["BED_BASE"].split() == setup_needs.bed_builds([])


def test_only_a_run_on_the_local_bed_needs_its_debian_packages(monkeypatch):
    """A CI runner's kind run (a Docker engine answers) installs none of the local bed's packages (Redis, iptables,
    the CNI plugins): make's deps asks bed-packages before installing them."""
    on_docker(monkeypatch, True)
    assert setup_needs.bed_packages([]) == []
    assert setup_needs.bed_packages(["--provider", "local"]) == ["bed"]
    on_docker(monkeypatch, False)
    assert setup_needs.bed_packages([]) == ["bed"]
    assert setup_needs.bed_packages(["--provider", "existing"]) == []


def test_makes_deps_asks_bed_packages_when_it_asks_which_base():
    recipe = MAKEFILE.read_text().split("\ndeps:\n", 1)[1].split("\n\n", 1)[0]
    assert "setup_needs bed-packages" in recipe and "$(BED_ASK)" in recipe
