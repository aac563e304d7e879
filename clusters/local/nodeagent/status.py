"""Container and Pod status as a kubelet reports it: container states, phase and conditions (pure functions)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from .containers import Proc
from .restart import should_restart

TERMINAL = ("Succeeded", "Failed")


def rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting(reason: str, message: str | None = None) -> dict:
    w = {"reason": reason}
    if message:
        w["message"] = message
    return {"waiting": w}


def running(started: float) -> dict:
    return {"running": {"startedAt": rfc3339(started)}}


def terminated(code: int, reason: str | None, started: float | None, finished: float, container_id: str,
               message: str | None = None) -> dict:
    t = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
         "startedAt": rfc3339(started), "finishedAt": rfc3339(finished), "containerID": container_id}
    if message:
        t["message"] = message
    return {"terminated": t}


@dataclass
class CState:
    """One container of a Pod: what its status says, plus the agent's bookkeeping (persisted)."""
    name: str
    kind: str  # init | sidecar | app
    image: str
    restart_count: int = 0
    state: dict = field(default_factory=lambda: waiting("ContainerCreating"))
    last_state: dict = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    image_id: str = ""
    container_id: str = ""
    backoff: float = 0.0
    next_start: float = 0.0
    runs: int = 0  # number of runs started (restart_count + 1 once running)
    proc: Proc | None = None
    devices: dict = field(default_factory=dict)  # env exposing the container's devices
    pull_failures: int = 0

    PERSIST = ("name", "kind", "image", "restart_count", "state", "last_state", "ready", "started", "image_id",
               "container_id", "backoff", "next_start", "runs", "devices", "pull_failures")

    def to_record(self) -> dict:
        d = {k: getattr(self, k) for k in self.PERSIST}
        d["proc"] = self.proc.to_dict() if self.proc else None
        return d

    @classmethod
    def from_record(cls, d: dict) -> "CState":
        c = cls(**{k: d[k] for k in cls.PERSIST if k in d})
        c.proc = Proc.from_dict(d["proc"]) if d.get("proc") else None
        return c

    @property
    def is_running(self) -> bool:
        return "running" in self.state

    @property
    def is_terminated(self) -> bool:
        return "terminated" in self.state

    @property
    def exit_code(self) -> int | None:
        t = self.state.get("terminated")
        return t["exitCode"] if t else None

    def last_exit(self) -> int | None:
        t = self.state.get("terminated") or self.last_state.get("terminated")
        return t["exitCode"] if t else None

    def to_status(self) -> dict:
        def full(s: dict) -> dict:
            return {"waiting": s.get("waiting"), "running": s.get("running"), "terminated": s.get("terminated")}
        st = {"name": self.name, "image": self.image, "imageID": self.image_id, "ready": self.ready,
              "started": self.started, "restartCount": self.restart_count, "state": full(self.state),
              "lastState": full(self.last_state) if self.last_state else {}}
        if self.container_id:
            st["containerID"] = self.container_id
        return st


def init_done(inits: list[CState]) -> bool:
    for c in inits:
        if c.kind == "sidecar":
            if not (c.is_running and c.started):
                return False
        elif not (c.is_terminated and c.exit_code == 0):
            return False
    return True


def compute_phase(policy: str, inits: list[CState], apps: list[CState], pod_terminal: bool = False,
                  own_policies: dict[str, str] | None = None) -> str:
    """Pod phase from container states (the kubelet's rules); `own_policies`: the app containers that set their
    own restartPolicy, by name (a stopped container that will run again keeps the Pod Running)."""
    failed_init = pending_init = 0
    for c in inits:
        if c.kind == "sidecar":
            continue
        if c.is_terminated:
            if c.exit_code != 0:
                failed_init += 1
        elif c.is_running:
            pending_init += 1
        else:
            last = c.last_state.get("terminated")
            if last and last["exitCode"] != 0:
                failed_init += 1
            else:
                pending_init += 1
    if failed_init and policy == "Never":
        return "Failed"
    run = wait = stopped = succeeded = restarting = 0
    for c in apps:
        if c.is_running:
            run += 1
            continue
        ended = c.state.get("terminated") or c.last_state.get("terminated")
        if not ended:
            wait += 1
            continue
        stopped += 1
        succeeded += ended["exitCode"] == 0
        restarting += should_restart("app", policy, ended["exitCode"], (own_policies or {}).get(c.name))
    if pod_terminal:  # deleted or deadline exceeded: every container has been stopped
        return "Succeeded" if apps and succeeded == len(apps) and not failed_init else "Failed"
    if pending_init or failed_init:
        return "Pending"
    if wait:
        return "Pending"
    if run:
        return "Running"
    if stopped:
        if restarting:
            return "Running"
        return "Succeeded" if stopped == succeeded else "Failed"
    return "Pending"


class Conditions:
    """Pod conditions owned by the node agent; lastTransitionTime changes only when a status flips."""
    TYPES = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")

    def __init__(self, saved: dict | None = None):
        self.state: dict[str, dict] = dict(saved or {})

    def set(self, ctype: str, ok: bool, now: float, reason: str | None = None, message: str | None = None) -> None:
        status = "True" if ok else "False"
        prev = self.state.get(ctype)
        ltt = prev["lastTransitionTime"] if prev and prev["status"] == status else rfc3339(now)
        # explicit nulls: the status is sent as a strategic merge patch, which keeps a field it is not told to drop
        c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": ltt,
             "reason": reason if not ok and reason else None, "message": message if not ok and message else None}
        self.state[ctype] = c

    def to_list(self) -> list[dict]:
        return [self.state[t] for t in self.TYPES if t in self.state]
