"""The CI recipe runs as written: the workflow and the composite action pass actionlint (built into the tool cache
by `make test`), and the gate's one command passes the action's inputs on to the suite."""
from __future__ import annotations

import os
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


def test_the_action_runs_the_gate_script_with_its_inputs():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    run = [s for s in action["runs"]["steps"] if "run" in s]
    assert [s["run"] for s in run] == ["bash ci/gate.sh"]
    assert set(run[0]["env"]) >= {"PROFILE", "PROVIDER", "SHARD", "BASELINE", "ARGS", "RAYCONF_OPERATOR_TREE"}


@pytest.mark.parametrize("env, expected", [
    ({"PROFILE": "kuberay-master"}, "--operator-profile kuberay-master --provider kind --run-id gate"),
    ({"PROFILE": "p", "PROVIDER": "local", "SHARD": "2/3", "BASELINE": "reports/b", "ARGS": "--core-only"},
     "--operator-profile p --provider local --run-id gate --shard 2/3 --baseline reports/b --fail-on regression "
     "--core-only"),
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
