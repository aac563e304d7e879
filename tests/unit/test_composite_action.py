"""The composite-action interpreter the hosted-runner simulation runs action.yml with (ci/composite.py,
ci/expressions.py): expressions substituted as GitHub does, GITHUB_OUTPUT/GITHUB_ENV/GITHUB_PATH read between steps,
steps in order with `if:` honoured, and what it cannot emulate said in one line before anything runs."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ci import composite  # noqa: E402
from ci.composite import ActionError, Job, ScriptRunner, StepIO  # noqa: E402
from ci.expressions import condition, evaluate, substitute  # noqa: E402

USES = {"actions/setup-python", "actions/setup-go", "actions/cache/restore", "actions/cache/save",
        "actions/upload-artifact"}
CTX = {"inputs": {"operator-profile": "kuberay-v1.7.0", "shard": ""},
       "steps": {"tool-cache": {"outputs": {"dir": "/c", "versions": "abc"}}, "restore-tools": {"outputs": {}}},
       "github": {"action_path": "/ap", "workspace": "/ws"}, "runner": {"os": "Linux", "arch": "X64"}, "env": {}}


@pytest.mark.parametrize("text, expected", [
    ("${{ inputs.operator-profile }}", "kuberay-v1.7.0"),
    ("${{ github.action_path }}/reports/gate*", "/ap/reports/gate*"),
    ("k-${{ runner.os }}-${{ runner.arch }}-${{ steps.tool-cache.outputs.versions }}", "k-Linux-X64-abc"),
    ("${{ steps.restore-tools.outputs.cache-hit }}", ""),     # an output never set is empty
    ("${{ steps.no-such-step.outputs.dir }}", ""),
    ("${{ inputs['operator-profile'] }}", "kuberay-v1.7.0"),
    ("${{ inputs.shard || 'none' }}", "none"),
    ("${{ 1 == 1 }} ${{ 'It''s' }}", "true It's"),
    ("no expression", "no expression"),
])
def test_expressions_are_substituted_as_github_does(text, expected):
    assert substitute(text, CTX) == expected


@pytest.mark.parametrize("expr, expected", [
    ("'ABC' == 'abc'", True),     # strings compare case-insensitively
    ("null == ''", True),         # mixed types compare as numbers: both 0
    ("steps.restore-tools.outputs.cache-hit != 'true'", True),
    ("!(inputs.shard != '')", True),
    ("'2' > 10", False),
])
def test_comparisons_follow_githubs_rules(expr, expected):
    assert evaluate(expr, CTX) is expected


def test_the_actions_save_condition():
    save = "always() && steps.tool-cache.outputs.dir != '' && steps.restore-tools.outputs.cache-hit != 'true'"
    assert condition(save, CTX, "failure")  # saved after a failed run too
    hit = {**CTX, "steps": {**CTX["steps"], "restore-tools": {"outputs": {"cache-hit": "true"}}}}
    assert not condition(save, hit, "success")
    assert condition(None, CTX, "success") and not condition(None, CTX, "failure")  # default: success()
    assert not condition("${{ inputs.shard != '' }}", CTX, "success")


@pytest.mark.parametrize("expr, says", [
    ("secrets.token", "unknown context `secrets`"),
    ("hashFiles('x')", "function hashFiles() is not one the simulation knows"),
    ("inputs.a ==", "ends too early"),
    ("inputs.a = 'b'", "cannot read it at `= 'b'`"),
    ("contains(inputs.a)", "contains() takes 2 arguments, given 1"),
    ("success(inputs.a)", "success() takes 0 arguments, given 1"),
])
def test_an_expression_it_cannot_read_is_one_line(expr, says):
    with pytest.raises(ActionError, match="^expression .*" + ".*".join(map(__import__("re").escape, says.split()))):
        evaluate(expr, CTX)


def test_outputs_files_are_parsed_with_heredocs_and_values_holding_equals():
    text = "dir=/var/cache/x\nversions=a=b\n\nnotes<<EOF\nline 1\nline 2\nEOF\ndir=/later\n"
    assert composite.parse_commands_file(text) == {"dir": "/later", "versions": "a=b", "notes": "line 1\nline 2"}


@pytest.mark.parametrize("text, says", [("a<<EOF\nnever closed\n", "never closed by a `EOF` line"),
                                        ("just words\n", "neither `name=value` nor `name<<DELIMITER`")])
def test_a_bad_outputs_file_is_one_line(text, says):
    with pytest.raises(ActionError, match="GITHUB_OUTPUT: .*" + __import__("re").escape(says)):
        composite.parse_commands_file(text)


def write_action(tmp_path: Path, steps: list[dict], inputs: dict | None = None) -> Path:
    path = tmp_path / "action.yml"
    path.write_text(yaml.safe_dump({"name": "t", "inputs": inputs or {"word": {"default": "hello"}},
                                    "runs": {"using": "composite", "steps": steps}}))
    return path


class Recording(ScriptRunner):
    """Runs `run:` steps for real (as this user) and records `uses:` steps with what they were given."""

    def __init__(self, state: Path):
        super().__init__(state)
        self.calls: list[tuple[str, dict]] = []

    def uses_step(self, step, with_, env):
        self.calls.append((step.uses, with_))
        return True, StepIO(outputs={"cache-hit": "true"}, env={"FROM_USES": "1"}, path=["/opt/tool/bin"])


def job(tmp_path: Path, steps: list[dict], **inputs) -> tuple[Job, Recording]:
    action = composite.load(write_action(tmp_path, steps), USES)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    j = Job(action, composite.resolve_inputs(action, inputs), {"workspace": str(ws), "action_path": str(tmp_path)},
            {"os": "Linux", "arch": "X64"}, {"PATH": "/usr/bin:/bin"})
    return j, Recording(tmp_path / "state")


def test_steps_run_in_order_and_see_what_earlier_steps_left(tmp_path):
    log = tmp_path / "order"
    steps = [
        {"id": "first", "shell": "bash", "run": f'echo first >> {log}; echo "dir=/c/${{{{ inputs.word }}}}" >> '
                                               f'"$GITHUB_OUTPUT"; echo "LATER=yes" >> "$GITHUB_ENV"'},
        {"id": "cache", "uses": "actions/cache/restore@v4", "with": {"path": "${{ steps.first.outputs.dir }}"}},
        {"shell": "bash", "env": {"HIT": "${{ steps.cache.outputs.cache-hit }}"},
         "run": f'echo "second $HIT $LATER $FROM_USES ${{PATH%%:*}} $PWD" >> {log}'},
        {"shell": "bash", "working-directory": "sub", "if": "${{ inputs.word == 'nope' }}", "run": f"echo no >> {log}"},
    ]
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    j, ex = job(tmp_path, steps, word="there")
    assert j.run(ex)
    assert log.read_text().splitlines() == ["first", f"second true yes 1 /opt/tool/bin {tmp_path / 'ws'}"]
    assert ex.calls == [("actions/cache/restore", {"path": "/c/there"})]
    assert [r.outcome for r in j.results] == ["success", "success", "success", "skipped"]


def test_after_a_failed_step_only_always_steps_run(tmp_path):
    log = tmp_path / "order"
    steps = [{"shell": "bash", "run": "exit 3"},
             {"shell": "bash", "run": f"echo skipped >> {log}"},
             {"shell": "bash", "if": "always()", "run": f"echo always >> {log}"},
             {"shell": "bash", "if": "failure()", "run": f"echo failure >> {log}"}]
    j, ex = job(tmp_path, steps)
    assert not j.run(ex)
    assert log.read_text().splitlines() == ["always", "failure"]
    assert [r.outcome for r in j.results] == ["failure", "skipped", "success", "success"]


def test_an_unknown_uses_is_one_line_before_anything_runs(tmp_path):
    path = write_action(tmp_path, [{"shell": "bash", "run": "true"}, {"uses": "docker/login-action@v3"}])
    with pytest.raises(ActionError, match=r"^action.yml step 2 \(docker/login-action@v3\): uses "
                                          r"docker/login-action@v3, which the simulation does not emulate \("):
        composite.load(path, USES)


@pytest.mark.parametrize("step, says", [({"shell": "pwsh", "run": "x"}, "shell 'pwsh'"),
                                        ({"run": "x", "uses": "a/b@v1"}, "exactly one of run: and uses:"),
                                        ({"shell": "bash", "run": "x", "timeout-minutes": 3}, "'timeout-minutes'")])
def test_a_step_it_cannot_interpret_is_one_line(tmp_path, step, says):
    with pytest.raises(ActionError, match=__import__("re").escape(says)):
        composite.load(write_action(tmp_path, [step]), USES)


def test_inputs_unknown_or_missing_are_one_line(tmp_path):
    action = composite.load(write_action(tmp_path, [], {"profile": {"required": True}, "args": {"default": ""}}),
                            USES)
    with pytest.raises(ActionError, match="input 'profile' is required"):
        composite.resolve_inputs(action, {})
    with pytest.raises(ActionError, match="input 'profiel' is not one of the action's"):
        composite.resolve_inputs(action, {"profiel": "x"})
    assert composite.resolve_inputs(action, {"profile": "p"}) == {"profile": "p", "args": ""}


def test_the_repositorys_action_plans_with_the_gate_given_its_inputs():
    action = composite.load(ROOT / "action.yml", USES)
    inputs = composite.resolve_inputs(action, {"operator-profile": "kuberay-v1.7.0", "args": "--core-only"})
    j = Job(action, inputs, {"workspace": "/ws", "action_path": "/ap"}, {"os": "Linux", "arch": "X64"}, {})
    plan = {p["run"]: p for _, p in j.plan() if p["run"]}
    gate = plan["bash ci/gate.sh"]
    assert gate["cwd"] == "/ap" and gate["env"]["ARGS"] == "--core-only" and gate["env"]["PROVIDER"] == "kind"
    assert gate["env"]["RAYCONF_CACHE"] == "<steps.tool-cache.outputs.dir>"
