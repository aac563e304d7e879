"""The CI recipe runs as written: the workflow and the composite action pass actionlint (built into the tool cache
by `make test`), and the gate's one command passes the action's inputs on to the suite."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from rayconformance.clusters.toolcache import CACHE, versions

ROOT = Path(__file__).resolve().parents[2]


def actionlint() -> Path:
    path = CACHE / f"actionlint-{versions()['ACTIONLINT_VERSION']}" / "bin" / "actionlint"
    if not path.is_file():
        pytest.skip(f"{path} is not built: `bash clusters/local/build-tools.sh actionlint` (make test builds it)")
    return path


def test_workflows_and_the_action_pass_actionlint():
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert workflows
    r = subprocess.run([str(actionlint()), *map(str, workflows)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr  # `uses: ./` makes actionlint read action.yml too


def action_steps() -> list[dict]:
    return yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]


def test_the_action_runs_the_gate_script_with_its_inputs():
    [gate] = [s for s in action_steps() if "ci/gate.sh" in s.get("run", "")]
    assert gate["run"] == "bash ci/gate.sh"
    assert set(gate["env"]) >= {"PROFILE", "PROVIDER", "SHARD", "BASELINE", "ARGS", "RAYCONF_OPERATOR_TREE",
                                "RAYCONF_CACHE"}


def test_the_action_keeps_the_tool_cache_between_jobs_keyed_by_the_pinned_versions():
    steps = action_steps()
    [pick] = [s for s in steps if "ci/tool-cache.sh" in s.get("run", "")]
    [restore] = [s for s in steps if s.get("uses", "").startswith("actions/cache/restore@")]
    [save] = [s for s in steps if s.get("uses", "").startswith("actions/cache/save@")]
    [gate] = [s for s in steps if "ci/gate.sh" in s.get("run", "")]
    dir_, versions = f"${{{{ steps.{pick['id']}.outputs.dir }}}}", f"steps.{pick['id']}.outputs.versions"
    assert restore["with"]["path"] == save["with"]["path"] == gate["env"]["RAYCONF_CACHE"] == dir_
    assert restore["with"]["key"] == save["with"]["key"] and versions in save["with"]["key"]
    assert steps.index(restore) < steps.index(gate) < steps.index(save) and save["if"].startswith("always()")
    assert pick["env"]["RAYCONF_CACHE"] == "${{ inputs.tool-cache }}"


def tool_cache(env: dict) -> dict:
    r = subprocess.run(["bash", str(ROOT / "ci" / "tool-cache.sh")], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], **env})
    assert r.returncode == 0, r.stderr
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


def test_the_tool_cache_is_the_callers_or_one_the_user_can_write(tmp_path):
    out = tool_cache({"RAYCONF_CACHE": str(tmp_path / "c"), "HOME": str(tmp_path)})
    assert out["dir"] == str(tmp_path / "c") and (tmp_path / "c").is_dir()
    assert re.fullmatch(r"[0-9a-f]{16}", out["versions"])
    if os.access("/var/cache", os.W_OK):
        pytest.skip("this user can write /var/cache: the fallback to ~/.cache is for runners' users")
    assert tool_cache({"HOME": str(tmp_path)})["dir"] == str(tmp_path / ".cache" / "rayconformance")


def test_an_unwritable_tool_cache_is_one_line():
    r = subprocess.run(["bash", str(ROOT / "ci" / "tool-cache.sh")], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "RAYCONF_CACHE": "/proc/rayconformance"})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "tool-cache" in r.stderr, r.stderr


@pytest.mark.parametrize("env, expected", [
    ({"PROFILE": "kuberay-master"}, "--operator-profile kuberay-master --provider kind --run-id gate"),
    ({"PROFILE": "p", "PROVIDER": "local", "SHARD": "2/3", "BASELINE": "reports/b", "ARGS": "--core-only"},
     "--operator-profile p --provider local --run-id gate-shard-2-of-3 --shard 2/3 --baseline reports/b "
     "--fail-on regression --core-only"),
    ({"PROFILE": "p", "SHARD": "1/2", "GITHUB_RUN_ID": "1234", "GITHUB_RUN_ATTEMPT": "2"},
     "--operator-profile p --provider kind --run-id gate-1234-2-shard-1-of-2 --shard 1/2"),
])
def test_gate_script_builds_the_suite_command(tmp_path, env, expected):
    fake = tmp_path / "make"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$OUT"\n')
    fake.chmod(0o755)
    out = tmp_path / "args"
    r = subprocess.run(["bash", str(ROOT / "ci" / "gate.sh")], capture_output=True, text=True,
                       env={"PATH": f"{tmp_path}:{os.environ['PATH']}", "OUT": str(out), **env})
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines() == ["conformance", f"CONFORMANCE_ARGS={expected}"]


def test_gate_script_without_a_profile_says_so_in_one_line():
    r = subprocess.run(["bash", str(ROOT / "ci" / "gate.sh")], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"]})
    assert r.returncode != 0 and "set PROFILE" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def caller_path(test: str, path: str, workspace: Path, cwd: Path) -> str:
    """ci/gate.sh's caller_path, run alone (the script sourced: its main does not run)."""
    r = subprocess.run(["bash", "-c", f'source "{ROOT / "ci" / "gate.sh"}" && caller_path "$0" "$1"', test, path],
                       cwd=cwd, capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], **({"GITHUB_WORKSPACE": str(workspace)} if workspace else {})})
    assert r.returncode == 0, r.stderr
    return r.stdout.rstrip("\n")


def test_relative_paths_are_the_callers_when_its_workspace_has_them(tmp_path):
    ws, action = tmp_path / "ws", tmp_path / "action"
    (ws / "ci" / "profiles").mkdir(parents=True)
    (ws / "ci" / "profiles" / "mine.yaml").write_text("{}")
    (ws / "reports" / "last").mkdir(parents=True)
    action.mkdir()
    assert caller_path("-f", "ci/profiles/mine.yaml", ws, action) == str(ws / "ci" / "profiles" / "mine.yaml")
    assert caller_path("-e", "reports/last", ws, action) == str(ws / "reports" / "last")
    assert caller_path("-d", ".", ws, action) == str(ws)
    assert caller_path("-d", "reports/../ci", ws, action) == str(ws / "ci")


def test_other_paths_stay_as_given(tmp_path):
    ws = tmp_path / "ws"
    (ws / "kuberay-master").mkdir(parents=True)  # a directory is no profile file
    assert caller_path("-f", "kuberay-master", ws, tmp_path) == "kuberay-master"  # a profile name
    assert caller_path("-e", "reports/published/kuberay/v1.7.0", ws, tmp_path) == "reports/published/kuberay/v1.7.0"
    assert caller_path("-e", "/abs/report", ws, tmp_path) == "/abs/report"
    assert caller_path("-e", "", ws, tmp_path) == ""


def test_without_a_workspace_the_callers_directory_counts(tmp_path):
    (tmp_path / "p.yaml").write_text("{}")
    assert caller_path("-f", "p.yaml", None, tmp_path) == str(tmp_path / "p.yaml")


def test_the_gate_passes_the_callers_paths_resolved(tmp_path):
    ws = tmp_path / "ws"
    (ws / "tree").mkdir(parents=True)
    (ws / "my-profile.yaml").write_text("{}")
    (ws / "base.yaml").write_text("{}")
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$PWD" "$RAYCONF_OPERATOR_TREE" "$@" > "$OUT"\n')
    fake.chmod(0o755)
    out = tmp_path / "args"
    r = subprocess.run(["bash", str(ROOT / "ci" / "gate.sh")], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": f"{fake.parent}:{os.environ['PATH']}", "OUT": str(out), "GITHUB_WORKSPACE": str(ws),
                            "PROFILE": "my-profile.yaml", "BASELINE": "base.yaml", "RAYCONF_OPERATOR_TREE": "tree"})
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines() == [
        str(ROOT), str(ws / "tree"), "conformance",
        f"CONFORMANCE_ARGS=--operator-profile {ws / 'my-profile.yaml'} --provider kind --run-id gate "
        f"--baseline {ws / 'base.yaml'} --fail-on regression"]
