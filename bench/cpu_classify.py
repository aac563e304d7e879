"""Which component a process belongs to, from what bench/cpu_sampler.py records of it: argv, comm and the markers
in its environment (`pod`: a Pod's process on the local bed, `bed`: a test-bed process, `run`: the pytest run, split
into the controller with its children, e.g. the operator install's kubectl, and the xdist workers with theirs) or in
its cgroups (`node`: a process in a kind node, `pod` too when a Pod's cgroup holds it). On kind the control plane runs
as Pods and is named by its programs as on the local bed; the node's own processes are the kubelet and its container
runtime (`node-agent/kubelet`, `node-agent/runtime`: on the local bed the node agent does both jobs), the Docker
engine that runs the nodes and its clients are `bed/engine`. The control plane runs as static Pods there, whose uid
(a hash) is their cgroup's too. What a run builds on first use (Go and C compilers, e.g. a source tree's operator,
Helm) is `setup/builds`: part of the run's CPU, not of the bed's or the harness's steady cost.

Components are `<group>/<part>` names (a bare name is its own group). Ray's processes are told apart by their
executable (`gcs_server`, `raylet`), their script (`dashboard/dashboard.py`, ...) or the title Ray gives a worker
(`ray::ServeReplica:app:deployment`); anything else in a Pod is `pods/other` until the accounting sees that the Pod
runs Ray (`ray/other`); one whose parent is a Ray process is its parent's (a job's driver, a dashboard module's
forkserver).
"""
from __future__ import annotations

import os

GCS, RAYLET, DASHBOARD = "ray/gcs", "ray/raylet", "ray/dashboard"
SERVE_CONTROLLER, SERVE_PROXY, SERVE_REPLICA = "ray/serve-controller", "ray/serve-proxy", "ray/serve-replica"
AUTOSCALER, RAY_WORKERS, RAY_CLI, RAY_OTHER = "ray/autoscaler", "ray/workers", "ray/cli", "ray/other"
OPERATOR = "operator"
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns")
NODE_AGENT, STORAGE, GATEWAY, BED_OTHER = "node-agent", "bed/storage", "bed/gateway", "bed/other"
KUBELET, NODE_RUNTIME, ENGINE = "node-agent/kubelet", "node-agent/runtime", "bed/engine"
BUILDS = "setup/builds"
BUILD_EXES = ("go", "compile", "link", "asm", "cgo", "vet", "gcc", "cc", "cc1", "collect2", "ld", "as")
ENGINE_EXES = ("dockerd", "containerd", "containerd-shim-runc-v2", "docker-proxy", "tini", "runc", "docker", "kind")
PYTEST, WORKERS, LOADGEN = "harness/pytest", "harness/xdist-workers", "harness/loadgen"
XDIST_BOOT = "exec(eval(sys.stdin.readline()))"  # how execnet starts an xdist worker
POD_OTHER = "pods/other"
SAMPLER, KERNEL, HOST_OTHER = "bench/sampler", "host/kernel", "host/other"

# groups in the order the table shows them; `host` and `bench` are not the run's
RAY_GROUPS = ("ray", OPERATOR)
BED_HARNESS_GROUPS = ("control-plane", NODE_AGENT, "bed", "harness", "pods")
SETUP_GROUPS = ("setup",)
NOT_RUN_GROUPS = ("bench", "host")

DASHBOARD_SCRIPTS = ("dashboard/dashboard.py", "dashboard/agent.py", "runtime_env/agent/main.py")
AUTOSCALER_SCRIPTS = ("autoscaler/_private/monitor.py", "autoscaler/v2/monitor.py")
OPERATOR_EXES = ("ray-operator", "manager")


def group(component: str) -> str:
    return component.split("/", 1)[0]


def is_ray(component: str) -> bool:
    return group(component) == "ray"


def in_run(component: str) -> bool:
    return group(component) not in NOT_RUN_GROUPS


def program(cmd: list[str], comm: str) -> tuple[str, str]:
    """(executable's base name, the script or `-m` module an interpreter runs, else "")."""
    if not cmd:
        return comm, ""
    exe = os.path.basename(cmd[0].split(" ", 1)[0])
    if not exe.startswith("python"):
        return exe, ""
    args = iter(cmd[1:])
    for a in args:
        if a == "-m":
            return exe, next(args, "")
        if a == "-c":
            return exe, "-c"
        if a in ("-W", "-X", "-Q"):
            next(args, None)
        elif not a.startswith("-"):
            return exe, a
    return exe, ""


def ray_title(text: str) -> str | None:
    """The component of a Ray worker titled `ray::<name>`, None for another process."""
    if not text.startswith("ray::"):
        return None
    name = text[len("ray::"):]
    if name.startswith("ServeController"):
        return SERVE_CONTROLLER
    if name.startswith(("ProxyActor", "HTTPProxyActor")):
        return SERVE_PROXY
    if name.startswith(("ServeReplica", "SERVE_REPLICA")):
        return SERVE_REPLICA
    if name.startswith(("DashboardAgent", "RuntimeEnvAgent")):
        return DASHBOARD
    return RAY_WORKERS


def by_command(cmd: list[str], comm: str) -> str | None:
    """The component a command line names by itself, None when it does not."""
    text = " ".join(cmd)
    title = ray_title(text) or ray_title(comm)
    if title:
        return title
    if text.startswith("ray-dashboard") or comm.startswith("ray-dashboard"):
        return DASHBOARD
    exe, script = program(cmd, comm)
    if exe == "gcs_server":
        return GCS
    if exe == "raylet":
        return RAYLET
    if exe in CONTROL_PLANE:
        return f"control-plane/{exe}"
    if exe in OPERATOR_EXES:
        return OPERATOR
    if exe == "local-path-provisioner":
        return STORAGE
    if exe == "traefik":
        return GATEWAY
    if exe in ENGINE_EXES or script.endswith("runc-wrapper.py"):
        return ENGINE
    if exe in BUILD_EXES:
        return BUILDS
    if script.endswith(DASHBOARD_SCRIPTS):
        return DASHBOARD
    if script.endswith(AUTOSCALER_SCRIPTS) or "kuberay-autoscaler" in cmd[1:3]:
        return AUTOSCALER
    if script.endswith("workers/default_worker.py"):
        return RAY_WORKERS
    if script.endswith("loadgen.py"):
        return LOADGEN
    if script.endswith("cinit.py") or script.startswith(("rayconformance.clusters.local.nodeagent",
                                                          "rayconformance.clusters.deviceplugin")):
        return NODE_AGENT
    if script.endswith("cpu_sampler.py"):
        return SAMPLER
    if exe == "ray" or script.endswith("/bin/ray"):
        return RAY_CLI
    if script.endswith("log_monitor.py") or script.startswith("ray."):
        return RAY_OTHER
    return None


def classify(info: dict, parent: str | None = None, ppid: int | None = None) -> str:
    """The component of one process: `info` as the sampler records it, `parent` the parent's component if known."""
    cmd, comm = info.get("cmd") or [], info.get("comm", "")
    marked = info.get("pod") or info.get("bed") or info.get("run") or info.get("node")
    if not cmd and not marked and (ppid in (0, 2) or comm == "kthreadd"):
        return KERNEL
    if not marked:
        if not cmd and parent and in_run(parent):  # gone before its command line and environment could be read
            return parent
        return SAMPLER if by_command(cmd, comm) == SAMPLER else HOST_OTHER
    named = by_command(cmd, comm)
    if info.get("node") and not info.get("pod"):  # a kind node's own process: the kubelet or its runtime
        if program(cmd, comm)[0] == "kubelet":
            return KUBELET
        return named if named and named != ENGINE else NODE_RUNTIME
    if named:
        return named
    if info.get("pod"):  # e.g. a job's driver, a dashboard module's forkserver: its parent's, if that is Ray
        return parent if parent and is_ray(parent) else POD_OTHER
    if info.get("bed"):
        return parent if parent and (group(parent) == "control-plane" or parent == NODE_AGENT) else BED_OTHER
    if XDIST_BOOT in " ".join(cmd) or parent == WORKERS:
        return WORKERS
    return PYTEST
