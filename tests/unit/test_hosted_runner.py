"""The hosted-runner simulation's pieces that need neither root nor the bed (ci/hosted_runner.py,
ci/runner_actions.py): its dry run prints action.yml's steps with their inputs substituted, and the emulated
actions/cache and upload-artifact keep and lay out files as GitHub's do."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ci import hosted_runner  # noqa: E402
from ci.composite import Step  # noqa: E402
from ci.runner_actions import Emulator  # noqa: E402


def emulator(tmp_path: Path) -> Emulator:
    return Emulator(state=tmp_path / "state", cache_root=tmp_path / "store", runner_tool_cache=tmp_path / "rtc",
                    tools=tmp_path / "tools", home=tmp_path / "home", run_id="42",
                    chown=lambda path, recursive=False: None)


def step(uses: str) -> Step:
    return Step(1, "s", {"uses": f"{uses}@v4"})


def test_the_dry_run_prints_the_actions_steps_with_the_inputs(capsys, monkeypatch):
    monkeypatch.setenv("RAYCONF_OPERATOR_TREE", "/somewhere/kuberay")
    assert hosted_runner.main(["--dry-run", "--input", "shard=1/2"]) == 0
    out = capsys.readouterr().out
    assert "nothing is created or run" in out and "RAYCONF_OPERATOR_TREE=/somewhere/kuberay" in out
    assert "run | bash ci/gate.sh" in out and "env ARGS=--core-only" in out and "env SHARD=1/2" in out
    assert out.index("Pick the tool cache") < out.index("Run the conformance suite") < out.index("Upload the report")
    assert "with key: rayconformance-tools-Linux-X64-<steps.tool-cache.outputs.versions>" in out


def test_the_dry_run_masks_the_user_and_password_of_a_proxy(capsys, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://alice:s3cret@proxy.invalid:3128")
    assert hosted_runner.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "HTTPS_PROXY=http://***@proxy.invalid:3128" in out and "s3cret" not in out and "alice" not in out


def test_an_unknown_input_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        hosted_runner.main(["--dry-run", "--input", "profile=x"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("hosted_runner: input 'profile' is not one of the action's")


def test_the_cache_round_trip_exact_key_then_a_restore_keys_match(tmp_path):
    em, cache = emulator(tmp_path), tmp_path / "toolcache"
    (cache / "kuberay-tree-x" / "bin").mkdir(parents=True)
    (cache / "kuberay-tree-x" / "bin" / "ray-operator").write_text("binary")
    with_ = {"path": str(cache), "key": "tools-Linux-abc"}
    assert em.cache_save(step("actions/cache/save"), with_).outputs == {}
    assert em.cache_save(step("actions/cache/save"), with_).outputs == {}  # an existing key: a warning, no error
    restored = tmp_path / "elsewhere"
    hit = em.cache_restore(step("actions/cache/restore"), {"path": str(cache), "key": "tools-Linux-abc"})
    assert hit.outputs["cache-hit"] == "true"
    shutil.rmtree(cache)
    partial = em.cache_restore(step("actions/cache/restore"),
                               {"path": str(cache), "key": "tools-Linux-new", "restore-keys": "tools-Linux-\n"})
    assert partial.outputs["cache-hit"] == "false" and partial.outputs["cache-matched-key"] == "tools-Linux-abc"
    assert (cache / "kuberay-tree-x" / "bin" / "ray-operator").read_text() == "binary"
    missed = em.cache_restore(step("actions/cache/restore"), {"path": str(restored), "key": "other"})
    assert missed.outputs["cache-hit"] == "false" and not restored.exists()


def test_upload_lays_the_matches_out_from_their_common_parent(tmp_path):
    reports = tmp_path / "ap" / "reports"
    (reports / "gate-7-1").mkdir(parents=True)
    (reports / "gate-7-1" / "conformance-report.yaml").write_text("r")
    (reports / "gate-7-1.tar.gz").write_text("a")
    (reports / "other").mkdir()
    io = emulator(tmp_path).upload_artifact(step("actions/upload-artifact"),
                                            {"name": "rayconformance-report", "path": f"{reports}/gate*\n"})
    dest = tmp_path / "store" / "artifacts" / "42" / "rayconformance-report"
    assert io.outputs["artifact-path"] == str(dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "gate-7-1", "gate-7-1.tar.gz", "gate-7-1/conformance-report.yaml"]


def test_setup_go_takes_the_runners_tool_cache_and_never_the_machines_go(tmp_path):
    for v in ("1.25.9", "1.26.3", "1.26.11"):
        (tmp_path / "rtc" / "go" / v / "x64" / "bin").mkdir(parents=True)
        (tmp_path / "rtc" / "go" / v / "x64" / "bin" / "go").write_text("")
    io = emulator(tmp_path).setup_go(step("actions/setup-go"), {"go-version": "1.26"})
    assert io.outputs == {"go-version": "1.26.11"}
    assert io.path == [str(tmp_path / "rtc" / "go" / "1.26.11" / "x64" / "bin"), str(tmp_path / "home" / "go" / "bin")]


def test_the_teardown_goes_on_to_the_sudoers_file_whatever_fails_before_it(tmp_path, monkeypatch):
    """A file of the runner's user gone before the teardown removes it, or a kind that is not there to delete the
    job's cluster, is a line of the teardown, not an exception that leaves the passwordless sudoers file and the user
    behind."""
    from ci import runner_machine

    def sh(*argv, check=True, **kw):
        if argv[0] == "find":  # a file listed, then gone (its program removed it as it ended)
            return subprocess.CompletedProcess(argv, 0, stdout=f"{tmp_path / 'gone.sock'}\n", stderr="")
        if argv[0] == "docker":
            return subprocess.CompletedProcess(argv, 0, stdout="rayconformance-gate\n", stderr="")
        raise FileNotFoundError(2, "No such file or directory", str(argv[0]))  # kind: the job dir was never made

    monkeypatch.setattr(runner_machine, "sh", sh)
    machine = runner_machine.Machine(runner_machine.Layout(tmp_path / "job", "rcrunner"), tmp_path)
    removed = []
    monkeypatch.setattr(machine, "_kill_user_processes", lambda: ["the runner user's processes ended: 0"])
    monkeypatch.setattr(machine, "_remove_user", lambda: removed.append("user"))
    monkeypatch.setattr(machine, "_remove_sudoers", lambda: removed.append("sudoers"))
    machine.added = ["user", "sudoers"]
    done = machine.teardown()
    assert removed == ["sudoers", "user"], done
    assert "the runner user's files in /tmp, /var/tmp, /dev/shm removed: 1" in done, done
    assert any(line.startswith("the job's kind clusters: could not remove") for line in done), done
    assert done[-2:] == ["sudoers removed", "user removed"], done
