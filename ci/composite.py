"""A small interpreter of a composite GitHub Action (action.yml): the subset this repository's action uses, so that
ci/hosted_runner.py runs the action's own steps, as written, in order, the way a runner does.

What it understands: `inputs` (defaults, `required`), `runs.steps` in order, each a `run:` step (`shell` bash, sh or
python; `working-directory`; `env`) or a `uses:` step (`with`), emulated by a handler named for the action
(`actions/cache/restore`, the `@ref` dropped); `id`, `if` (default `success()`) and `continue-on-error`.
Expressions `${{ ... }}` (ci/expressions.py) see the contexts `inputs`, `steps.<id>.outputs.<name>` (and
`.outcome`/`.conclusion`), `github`, `runner` and `env`. Between steps: `GITHUB_OUTPUT` (`name=value` and
`name<<DELIM` lines) becomes the step's outputs, `GITHUB_ENV` the environment of the steps after it, `GITHUB_PATH`
directories put first on their PATH.

Anything else is one line (`ActionError`) before the first step runs. How a step runs is the caller's (`Executor`).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ci.expressions import ActionError, condition, substitute, text as _text, truthy  # noqa: E402

STEP_KEYS = {"name", "id", "if", "uses", "with", "run", "shell", "working-directory", "env", "continue-on-error"}
SHELLS = {"bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"], "sh": ["sh", "-e"], "python": ["python"]}


# --- the files a step writes ------------------------------------------------------------------------------------------

def parse_commands_file(text: str, what: str = "GITHUB_OUTPUT") -> dict[str, str]:
    """`name=value` and `name<<DELIM` ... `DELIM` lines (GITHUB_OUTPUT, GITHUB_ENV); a later name wins."""
    out, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body = []
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ActionError(f"{what}: `{name}<<{delim}` is never closed by a `{delim}` line")
            i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        else:
            raise ActionError(f"{what}: line `{line}` is neither `name=value` nor `name<<DELIMITER`")
    return out


# --- the action ------------------------------------------------------------------------------------------------------

@dataclass
class Step:
    """One step as written, with the id its outputs are found under (`id:`, else its position)."""
    index: int
    id: str
    raw: dict

    @property
    def name(self) -> str:
        return self.raw.get("name") or (f"uses {self.raw['uses']}" if "uses" in self.raw else
                                        f"run {self.raw['run'].splitlines()[0]}")

    @property
    def uses(self) -> str | None:
        """The action a `uses:` step names, without its `@ref`."""
        return self.raw["uses"].split("@", 1)[0] if "uses" in self.raw else None


@dataclass
class Action:
    path: Path
    inputs: dict
    steps: list[Step]


def load(path: Path, known_uses: set[str]) -> Action:
    """The action's inputs and steps, checked: each step a `run:` (with a shell the interpreter knows) or a `uses:`
    of `known_uses`; an unknown key or action is one line."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ActionError(f"{path}: {' '.join(str(e).split())}") from None
    runs = (doc or {}).get("runs") or {}
    if runs.get("using") != "composite":
        raise ActionError(f"{path}: not a composite action (runs.using: {runs.get('using')!r})")
    steps = []
    for i, raw in enumerate(runs.get("steps") or [], 1):
        where = f"{path.name} step {i} ({raw.get('name') or raw.get('uses') or raw.get('id') or 'unnamed'})"
        extra = set(raw) - STEP_KEYS
        if extra:
            raise ActionError(f"{where}: key {sorted(extra)[0]!r} is not one the simulation interprets")
        if ("run" in raw) == ("uses" in raw):
            raise ActionError(f"{where}: needs exactly one of run: and uses:")
        step = Step(i, str(raw.get("id") or f"__{i}"), raw)
        if step.uses is not None and step.uses not in known_uses:
            raise ActionError(f"{where}: uses {raw['uses']}, which the simulation does not emulate "
                              f"(it emulates {', '.join(sorted(known_uses))})")
        if "run" in raw and raw.get("shell") not in SHELLS:
            raise ActionError(f"{where}: shell {raw.get('shell')!r} (a composite run step names one of "
                              f"{', '.join(SHELLS)})")
        steps.append(step)
    return Action(Path(path), doc.get("inputs") or {}, steps)


def resolve_inputs(action: Action, given: dict[str, str]) -> dict[str, str]:
    """Every input's value: the one given, else its default; an unknown or missing required input is one line."""
    unknown = sorted(set(given) - set(action.inputs))
    if unknown:
        raise ActionError(f"input {unknown[0]!r} is not one of the action's ({', '.join(action.inputs)})")
    out = {}
    for name, spec in action.inputs.items():
        spec = spec or {}
        if name in given:
            out[name] = str(given[name])
        elif spec.get("required") and "default" not in spec:
            raise ActionError(f"input {name!r} is required: pass it (--input {name}=VALUE)")
        else:
            out[name] = _text(spec.get("default", ""))
    return out


# --- running it ------------------------------------------------------------------------------------------------------

@dataclass
class StepIO:
    """What a step leaves for the steps after it: its outputs, environment and PATH entries."""
    outputs: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)


class Executor(Protocol):
    def run_step(self, step: Step, argv: list[str], script: str, cwd: str, env: dict[str, str]) -> tuple[int, StepIO]:
        """Run a `run:` step's script (argv ends with the script file's place, `{0}`); its exit code and files."""

    def uses_step(self, step: Step, with_: dict[str, str], env: dict[str, str]) -> tuple[bool, StepIO]:
        """Emulate a `uses:` step; whether it succeeded, and what it leaves."""


class Unknown(dict):
    """A value known only once the job runs (a step's output): `<steps.ID.outputs.NAME>` in a dry run's plan."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def get(self, key, default=None):
        return Unknown(f"{self.path}.{key}")

    def __str__(self) -> str:
        return f"<{self.path}>"


class ScriptRunner:
    """Runs `run:` steps as a runner does: the script in a file, fresh GITHUB_OUTPUT/GITHUB_ENV/GITHUB_PATH files,
    read back after it. `state` is where the files go; `popen` adds subprocess options (another user, say) and
    `prepare_file` is called on every file the step must be able to use; with `log`, the steps' output is copied there
    as well as shown."""

    def __init__(self, state: Path, popen: dict | None = None, prepare_file: Callable[[Path], None] = lambda p: None,
                 log: Path | None = None):
        self.state, self.popen, self.prepare_file, self.log = Path(state), popen or {}, prepare_file, log

    def run_step(self, step: Step, argv: list[str], script: str, cwd: str, env: dict[str, str]) -> tuple[int, StepIO]:
        self.state.mkdir(parents=True, exist_ok=True)
        files = {}
        for name in ("script", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH"):
            fd, path = tempfile.mkstemp(prefix=f"{step.id}-{name.lower()}-", dir=self.state)
            os.close(fd)
            files[name] = Path(path)
        files["script"].write_text(script + "\n")
        for path in files.values():
            self.prepare_file(path)
        env = {**env, **{k: str(v) for k, v in files.items() if k != "script"}}
        argv = [str(files["script"]) if a == "{0}" else a for a in argv]
        with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE if self.log else None,
                              stderr=subprocess.STDOUT if self.log else None, **self.popen) as proc:
            if self.log:  # the step's output to the terminal and the job's log, as it comes
                with open(self.log, "ab") as log:
                    for line in proc.stdout:
                        sys.stdout.buffer.write(line)
                        sys.stdout.flush()
                        log.write(line)
        rc = proc.returncode
        io = StepIO(parse_commands_file(files["GITHUB_OUTPUT"].read_text(), "GITHUB_OUTPUT"),
                    parse_commands_file(files["GITHUB_ENV"].read_text(), "GITHUB_ENV"),
                    [ln.strip() for ln in files["GITHUB_PATH"].read_text().splitlines() if ln.strip()])
        for path in files.values():
            path.unlink(missing_ok=True)
        return rc, io


@dataclass
class StepResult:
    step: Step
    outcome: str  # success, failure or skipped
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Job:
    """The action run as one job: the contexts the expressions see and what the steps left so far."""
    action: Action
    inputs: dict[str, str]
    github: dict[str, str]
    runner: dict[str, str]
    env: dict[str, str]
    steps: dict[str, dict] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    status: str = "success"
    results: list[StepResult] = field(default_factory=list)

    def context(self) -> dict:
        return {"inputs": self.inputs, "github": self.github, "runner": self.runner, "env": self.env,
                "steps": self.steps}

    def prepare(self, step: Step) -> dict:
        """The step with its expressions substituted: `env`, `with`, `working-directory`, `run`, and its argv."""
        ctx, raw = self.context(), step.raw
        env = {k: substitute(_text(v), ctx, self.status) for k, v in (raw.get("env") or {}).items()}
        with_ = {k: substitute(_text(v), ctx, self.status) for k, v in (raw.get("with") or {}).items()}
        cwd = substitute(raw.get("working-directory") or "", ctx, self.status) or self.github["workspace"]
        if not cwd.startswith("/"):
            cwd = str(Path(self.github["workspace"]) / cwd)
        return {"env": env, "with": with_, "cwd": cwd, "run": substitute(raw.get("run", ""), ctx, self.status),
                "argv": SHELLS.get(raw.get("shell"), []) + ["{0}"] if "run" in raw else []}

    def plan(self) -> list[tuple[Step, dict]]:
        """Each step as it would run (`prepare`), the steps' outputs shown as `<steps.ID.outputs.NAME>`: a dry run."""
        saved, self.steps = self.steps, Unknown("steps")
        try:
            return [(step, self.prepare(step)) for step in self.action.steps]
        finally:
            self.steps = saved

    def step_env(self, own: dict[str, str]) -> dict[str, str]:
        env = {**self.env, **own}
        if self.path:
            env["PATH"] = ":".join([*reversed(self.path), env.get("PATH", "")]).rstrip(":")
        return env

    def run(self, executor: Executor, on_step: Callable[[Step, str], None] = lambda s, what: None) -> bool:
        """Every step in order, as a runner does; True when the job succeeded."""
        for step in self.action.steps:
            if not condition(step.raw.get("if"), self.context(), self.status):
                self._record(step, "skipped", {})
                on_step(step, "skipped")
                continue
            p = self.prepare(step)
            on_step(step, "start")
            if step.uses is None:
                rc, io = executor.run_step(step, p["argv"], p["run"], p["cwd"], self.step_env(p["env"]))
                ok = rc == 0
            else:
                ok, io = executor.uses_step(step, p["with"], self.step_env(p["env"]))
            self.env.update(io.env)
            self.path.extend(io.path)
            outcome = "success" if ok else "failure"
            self._record(step, outcome, io.outputs)
            if not ok and not truthy(substitute(step.raw.get("continue-on-error", False), self.context())):
                self.status = "failure"
            on_step(step, outcome)
        return self.status == "success"

    def _record(self, step: Step, outcome: str, outputs: dict[str, str]) -> None:
        self.steps[step.id] = {"outputs": dict(outputs), "outcome": outcome, "conclusion": outcome}
        self.results.append(StepResult(step, outcome, dict(outputs)))
