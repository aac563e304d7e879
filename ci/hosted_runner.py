"""The composite action (action.yml) run as a GitHub-hosted runner runs it, as close as this machine allows (issue 52,
deliverable 6): a non-root user with passwordless sudo, the project's Docker engine with its socket given to that
user's `docker` group, and the action's own steps, read from action.yml (ci/composite.py) and run as that user in
order, for a `--core-only` selection of KubeRay v1.7.0 built from a tree, on kind.

    # as root, under the bed lock, once the offline kind images are built (the engine reaches no registry):
    #   make kind-images CONFORMANCE_ARGS="--operator-profile kuberay-v1.7.0"
    RAYCONF_OPERATOR_TREE=<a KubeRay v1.7.0 clone> flock /tmp/rc-bed.lock .venv/bin/python ci/hosted_runner.py
    .venv/bin/python ci/hosted_runner.py --dry-run          # the steps as they would run; nothing is made or run
    .venv/bin/python ci/hosted_runner.py --input args=...   # another input for the action

The job: GITHUB_WORKSPACE is a fresh clone of this repository at HEAD with the operator tree cloned into it
(`operator-tree/`, given to the action as a relative path, as a caller's checkout is); github.action_path another
clone (as a runner fetches `uses: owner/repo@ref`); RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_ENV and GITHUB_PATH per step.
`uses:` steps are emulated by name (ci/runner_actions.py); actions/cache and upload-artifact keep their files under
/var/tmp/rc-runner-cache, the one thing left after the run. Every sudo the action runs is logged by a shim first on
the user's PATH. At the end: the user, each sudo call, the kind node containers seen in the engine, whether anything
of the local bed (etcd, Kubernetes, CoreDNS) was built, the report and its `rayconformance results` summary.

Not simulated: a fresh VM (Debian packages the machine has are not installed again, so install-deps may need no
sudo), the hosted image's Docker at /var/run/docker.sock (the user reaches the engine by DOCKER_HOST, and its
containers by the engine's own address: no default route), registries (the offline images stand in for them),
GitHub's cache and artifact services, other actions than the five action.yml uses (one line names one). This
machine's network settings (CA bundles, pip's and Go's index, proxies) are passed on to the runner's user.
"""
from __future__ import annotations

import argparse
import calendar
import os
import pwd
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ci import composite  # noqa: E402
from ci.composite import ActionError, Job  # noqa: E402
from ci.runner_actions import Emulator  # noqa: E402
from ci.runner_machine import RUNNER_UID, ROOT, Layout, Machine, SimulationError, kindtools  # noqa: E402

JOB = Path("/var/tmp/rc-runner-job")
CACHE_ROOT = Path("/var/tmp/rc-runner-cache")
INPUTS = {"operator-profile": "kuberay-v1.7.0", "operator-tree": "operator-tree", "args": "--core-only",
          "provider": "kind"}
TOOL_CACHE_STEP = "tool-cache"  # the action's step whose `dir` output is the runner's tool cache (action.yml)
USES = {"actions/setup-python", "actions/setup-go", "actions/cache/restore", "actions/cache/save",
        "actions/upload-artifact"}
# this machine's network settings, passed on to the runner's user: TLS trust (CA bundles), pip's and Go's index, proxies
MACHINE_ENV = re.compile(r"(CA_BUNDLE|CERT_FILE|CERT_DIR|CAINFO|CA_CERTS|SSL_ROOTS_FILE_PATH|_PROXY|_proxy)$"
                         r"|^PIP_(?!REQUIRE_VIRTUALENV)|^GO(PROXY|SUMDB|NOSUMDB|PRIVATE)$")
USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")  # scheme://user:password@
BED = ("etcd", "kubernetes", "coredns", "kubenode")  # the local bed's components (kubenode: kind's kubelet build)


def shown(value: str) -> str:
    """A value of the runner's environment as the dry run prints it: a URL's user and password (a proxy's, an
    index's) masked."""
    return USERINFO.sub(r"\1***@", value)


def build_job(user: str, inputs: dict[str, str], run_id: str) -> tuple[Layout, Job]:
    lay = Layout(JOB, user)
    action = composite.load(ROOT / "action.yml", USES)
    github = {"workspace": str(lay.workspace), "action_path": str(lay.action_path), "run_id": run_id,
              "run_attempt": "1", "job": "gate", "event_name": "workflow_dispatch"}
    runner = {"os": "Linux", "arch": "X64", "temp": str(lay.temp), "tool_cache": str(CACHE_ROOT / "hostedtoolcache"),
              "name": "rayconformance-simulated-runner"}
    env = {"HOME": str(lay.home), "USER": user, "LOGNAME": user, "SHELL": "/bin/bash", "LANG": "C.UTF-8",
           "PATH": f"{lay.shim}:{lay.image_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": github["workspace"],
           "GITHUB_ACTION_PATH": github["action_path"], "GITHUB_RUN_ID": run_id, "GITHUB_RUN_ATTEMPT": "1",
           "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "RUNNER_TEMP": runner["temp"],
           "RUNNER_TOOL_CACHE": runner["tool_cache"], "DOCKER_HOST": f"unix://{kindtools.ENGINE_SOCKET}"}
    env.update({k: v for k, v in os.environ.items() if MACHINE_ENV.search(k)})
    return lay, Job(action, composite.resolve_inputs(action, inputs), github, runner, env)


def print_plan(lay: Layout, job: Job, tree: str) -> None:
    print("hosted-runner simulation, dry run: nothing is created or run")
    print(f"  runner user: {lay.user} (uid {RUNNER_UID}, groups {lay.user},docker), passwordless sudo "
          f"(/etc/sudoers.d/rayconf-{lay.user}); sudo logged by {lay.shim}/sudo to {lay.sudo_log}")
    print(f"  engine: make engine-up; {kindtools.ENGINE_SOCKET} group docker, mode 0660")
    print(f"  workspace: {lay.workspace} (clone of {ROOT} at HEAD); operator tree: {lay.tree} "
          f"(clone of RAYCONF_OPERATOR_TREE={tree or '(not set)'})")
    print(f"  action path: {lay.action_path} (clone of {ROOT} at HEAD); caches and artifacts: {CACHE_ROOT}")
    print("  runner environment:")
    for k, v in job.env.items():
        print(f"    {k}={shown(v)}")
    print("  steps (as action.yml has them; <steps.ID.outputs.NAME> is known once that step ran):")
    for step, p in job.plan():
        print(f"  {step.index}. {step.name}" + (f" (id {step.raw['id']})" if "id" in step.raw else "")
              + f"  if: {step.raw.get('if', 'success()')}")
        if step.uses:
            print("       emulated (ci/runner_actions.py)")
            for k, v in p["with"].items():
                print(f"       with {k}: {' | '.join(v.strip().splitlines())}")
            continue
        print(f"       as {lay.user}: {' '.join(p['argv'])}  in {p['cwd']}")
        for k, v in p["env"].items():
            print(f"       env {k}={v}")
        for line in p["run"].strip().splitlines():
            print(f"       run | {line}")


def bed_builds(tool_cache: str, job_log: Path, since: float) -> list[str]:
    """What of the local bed the run built: its components' directories in the runner's tool cache, the build
    record's lines for them (since the job started), and the build script's lines for them in the job's output."""
    if not tool_cache:
        return ["(the tool cache step gave no directory: nothing to check)"]
    d, found = Path(tool_cache), []
    found += [f"{p} exists" for c in BED for p in sorted(d.glob(f"{c}-*"))]
    times = d / "logs" / "build-times.tsv"
    for line in (times.read_text().splitlines() if times.exists() else []):
        when, what = (line.split("\t") + [""])[:2]
        if what.split("@")[0] in BED and calendar.timegm(time.strptime(when, "%Y-%m-%dT%H:%M:%SZ")) >= since:
            found.append(f"build-times.tsv: {line}")
    text = job_log.read_text(errors="replace") if job_log.exists() else ""
    found += [ln for ln in text.splitlines() if ln.startswith("build-tools: ") and any(f" {c}" in ln for c in BED[:3])]
    return found


def summary(machine: Machine, job: Job, lay: Layout, since: float, run_id: str) -> list[str]:
    out = [f"runner user: {machine.user_id}", "sudo calls:"]
    calls = lay.sudo_log.read_text().splitlines() if lay.sudo_log.exists() else []
    out += [f"  {c}" for c in calls] or ["  none (everything the action needs from root was there already)"]
    out.append(f"kind on the engine ({kindtools.ENGINE_SOCKET}):")
    out += [f"  {name}: {what}" for name, what in sorted(machine.seen.items())] or ["  no kind node container seen"]
    tool_cache = job.steps.get(TOOL_CACHE_STEP, {}).get("outputs", {}).get("dir", "")
    built = bed_builds(tool_cache, lay.job_log, since)
    out.append(f"local bed built during the run (tool cache {tool_cache or '?'}): " + ("none" if not built else ""))
    out += [f"  {b}" for b in built]
    out.append("steps: " + ", ".join(f"{r.step.index}:{r.outcome}" for r in job.results))
    artifacts = CACHE_ROOT / "artifacts" / run_id
    archives = sorted(artifacts.rglob("gate*.tar.gz"))
    out.append(f"report: {archives[0] if archives else f'none uploaded under {artifacts}'}")
    if archives:
        r = subprocess.run([sys.executable, "-m", "rayconformance", "results", str(archives[0])], cwd=ROOT,
                           capture_output=True, text=True)
        out += [f"  {ln}" for ln in (r.stdout + r.stderr).strip().splitlines()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print the steps as they would run; run nothing")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", help="an action input")
    ap.add_argument("--user", default="rcrunner", help="the runner's user (created, then removed)")
    a = ap.parse_args(argv)
    given = dict(INPUTS)
    for item in a.input:
        if "=" not in item:
            ap.exit(2, f"hosted_runner: --input {item}: give NAME=VALUE\n")
        given.update([item.split("=", 1)])
    tree = os.environ.get("RAYCONF_OPERATOR_TREE", "")
    run_id = str(int(time.time()))
    try:
        lay, job = build_job(a.user, given, run_id)
    except ActionError as e:
        ap.exit(2, f"hosted_runner: {e}\n")
    if a.dry_run:
        print_plan(lay, job, tree)
        return 0
    machine = Machine(lay, Path(tree or "/nonexistent"))
    try:
        machine.preflight()
    except SimulationError as e:
        ap.exit(2, f"hosted_runner: {e}\n")
    for sig in (signal.SIGTERM, signal.SIGHUP):  # as Ctrl-C (KeyboardInterrupt): out through the teardown
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
    since, ok, report = time.time(), False, []
    try:
        machine.setup()
        print(f"runner: {machine.user_id}; job {run_id} in {lay.job}", flush=True)
        emulator = Emulator(state=lay.state, cache_root=CACHE_ROOT, runner_tool_cache=CACHE_ROOT / "hostedtoolcache",
                            tools=lay.tools, home=lay.home, run_id=run_id, chown=machine.chown, log=lay.job_log,
                            popen={"user": RUNNER_UID, "group": pwd.getpwnam(a.user).pw_gid, "umask": 0o022,
                                   "extra_groups": [os.stat(kindtools.ENGINE_SOCKET).st_gid]})

        def on_step(step, what):
            machine.seed(job.steps.get(TOOL_CACHE_STEP, {}).get("outputs", {}).get("dir", ""))
            print(f"=== step {step.index} {step.name}: {what}", flush=True)

        machine.sample()
        ok = job.run(emulator, on_step)
        report = summary(machine, job, lay, since, run_id)
    except (SimulationError, ActionError, OSError, subprocess.CalledProcessError) as e:
        print(f"hosted_runner: {' '.join(str(e).split())}", file=sys.stderr)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # teardown runs to its end
        for line in machine.teardown():
            print(f"teardown: {line}")
    print("\n".join(["", "=== hosted-runner simulation", *report, f"job: {'succeeded' if ok else 'failed'}"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
