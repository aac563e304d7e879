"""Termination: stopping containers with their grace period and preStop hook, and ending the Pod.

A container is stopped by running its preStop hook, sending SIGTERM to its PID 1, waiting out the grace period
and then SIGKILL. A deleted Pod stops its app containers first, then its sidecars in reverse order, all against one
deadline; once every process has gone it is given a terminal phase and deleted with grace 0 and a UID precondition.
A force delete (the object is gone) or an agent shutdown kills at once. Mixed into `PodWorker` (podworker.py),
whose state it uses.
"""
from __future__ import annotations

import signal
import threading
import time

from . import containers, probes
from .kube import ApiError, pod_path
from .restart import RESYNC
from .status import TERMINAL, CState, compute_phase


def grace_period(pod_spec: dict, probe_failed: dict | None = None) -> float:
    """The Pod's terminationGracePeriodSeconds (default 30); a container killed because a liveness or startup probe
    failed (probe_failed: its spec) gets that probe's own terminationGracePeriodSeconds where one is set."""
    if probe_failed:
        for k in ("livenessProbe", "startupProbe"):
            g = (probe_failed.get(k) or {}).get("terminationGracePeriodSeconds")
            if g is not None:
                return float(g)
    g = pod_spec.get("terminationGracePeriodSeconds")
    return float(30 if g is None else g)


class Termination:
    killing: set[str]  # containers being stopped; they are not started again until their exit has been seen
    term_deadline: float | None  # monotonic deadline of the Pod's graceful deletion, once it has begun

    def _grace(self, probe_failed: str | None = None) -> float:
        return grace_period(self.pod["spec"], self.spec_of(probe_failed) if probe_failed else None)

    def _kill_container(self, c: CState, grace: float) -> None:
        """preStop, SIGTERM, wait up to grace, SIGKILL — in the background; the exit shows up as usual."""
        if c.name in self.killing or not c.proc:
            return
        self.killing.add(c.name)
        proc, spec = c.proc, self.spec_of(c.name)

        def kill():
            deadline = time.monotonic() + grace
            self._pre_stop(spec, proc, deadline)
            proc.signal(signal.SIGTERM)
            if not proc.wait(max(0.0, deadline - time.monotonic())):
                proc.kill()
                proc.wait(10)
        threading.Thread(target=kill, daemon=True, name=f"kill-{c.name}").start()

    def _pre_stop(self, spec: dict, proc: containers.Proc, deadline: float) -> None:
        pre = (spec.get("lifecycle") or {}).get("preStop")
        if not pre or not proc.alive():
            return
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ok, msg = probes.run_handler(pre, probes.Target(self.sandbox.ip or "", spec, proc), timeout=left)
        if not ok:
            self.event("Warning", "FailedPreStopHook", f"PreStopHook failed: {msg}"[:1000],
                       f"spec.containers{{{spec['name']}}}")

    def _sync_deleting(self, now: float) -> bool:
        md = self.pod["metadata"]
        if self.term_deadline is None:
            grace = md.get("deletionGracePeriodSeconds")
            grace = self._grace() if grace is None else float(grace)
            self.term_deadline = time.monotonic() + grace
            self._stop_all_probers()
            live = [c for c in self.ctrs.values() if c.proc and c.proc.alive()]
            for c in live:
                self.event("Normal", "Killing", f"Stopping container {c.name}", self._fieldpath(c))
            threading.Thread(target=self._terminate_all, args=(self.term_deadline,), daemon=True,
                             name=f"terminate-{self.name}").start()
        live = [c for c in self.ctrs.values() if c.proc and c.proc.alive()]
        if live:
            for c in live:
                c.ready = False
            self._push_status(now)
            self.next_wake = now + 1.0
            return False
        self._handle_exits(now)
        for c in self.ctrs.values():
            if c.proc is not None:  # ended but the waiter has not reported yet
                self.next_wake = now + 0.2
                return False
        self._finish_terminal()
        if self.phase not in TERMINAL:
            self.phase = compute_phase(self.policy, self.inits, self.apps, pod_terminal=True)
        self._push_status(now)
        self._save()
        if not self.final_deleted:
            try:
                self.agent.kube.delete(pod_path(self.ns, self.name),
                                       {"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}})
            except ApiError as e:
                if e.status not in (404, 409):
                    raise
            self.final_deleted = True
            self._save()
        self.next_wake = now + RESYNC
        return False

    def _terminate_all(self, deadline: float) -> None:
        """Graceful stop of every running container: app containers first, then sidecars in reverse order."""
        apps = [c for c in self.apps if c.proc and c.proc.alive()]
        sides = [c for c in reversed(self.inits) if c.proc and c.proc.alive()]

        def stop(c: CState) -> None:
            proc = c.proc
            if proc is None:
                return
            self._pre_stop(self.spec_of(c.name), proc, deadline)
            proc.signal(signal.SIGTERM)

        for group in (apps, sides):
            ts = [threading.Thread(target=stop, args=(c,), daemon=True) for c in group]
            for t in ts:
                t.start()
            for c in group:
                p = c.proc
                if p is not None:
                    p.wait(max(0.0, deadline - time.monotonic()))
            for t in ts:
                t.join(max(0.0, deadline - time.monotonic()))
        for c in self.ctrs.values():
            p = c.proc
            if p is not None and p.alive():
                p.kill()
                p.wait(10)
        self.kick()

    def _kill_everything(self) -> None:
        self._stop_all_probers()
        procs = [c.proc for c in self.ctrs.values() if c.proc]
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(5)
        self._handle_exits(time.time())

    def _finish_terminal(self) -> None:
        """A terminal Pod keeps its logs but not its sandbox, address or devices."""
        if self.sandbox.rec.get("pause_pid") or self.sandbox.rec.get("netns"):
            for c in self.ctrs.values():
                if c.proc and c.proc.alive():
                    c.proc.kill()
            self.sandbox.destroy(self.agent.net)
            self.sandbox.rec["netns"] = None
        self.agent.devices.release(self.uid)
        self.agent.volumes.tokens.forget(self.uid)

    def _cleanup(self) -> None:
        self._finish_terminal()
        self.sandbox.remove_files()
        self.agent.store.drop_pod(self.uid)

    def shutdown(self) -> None:
        """Agent shutdown: kill the Pod's processes and remove its sandbox (no API calls)."""
        self.stopping = True
        self.kick()
        if threading.current_thread() is not self.thread and self.thread.is_alive():
            self.done.wait(15)  # let a sync in progress finish, so nothing starts after the kill
        self._kill_everything()
        self._finish_terminal()
        self.agent.store.drop_pod(self.uid)
