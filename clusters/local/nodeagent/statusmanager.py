"""The status manager: the Pod's conditions, and its status sent to the API server when it has changed.

The status goes out as a strategic merge patch of `pods/status` with a UID precondition; an unchanged status is
not sent again, a failed patch is retried after RETRY. Phase and container states are computed elsewhere
(`status`, `runtime`). Mixed into `PodWorker` (podworker.py), whose state it uses.
"""
from __future__ import annotations

import logging

from .kube import ApiError, SMP, pod_path
from .restart import RETRY
from .status import TERMINAL, Conditions, init_done, rfc3339

log = logging.getLogger("nodeagent.pods")


class StatusManager:
    conds: Conditions
    last_sent: dict | None

    def _conditions(self, now: float) -> list[dict]:
        c = self.conds
        terminal = self.phase in TERMINAL
        c.set("PodReadyToStartContainers", self.sandbox.alive() and not terminal, now)
        if not self.inits or init_done(self.inits) or (terminal and self.phase == "Succeeded"):
            c.set("Initialized", True, now)
        else:
            pending = [x.name for x in self.inits if not (x.is_terminated and x.exit_code == 0)
                       and not (x.kind == "sidecar" and x.is_running and x.started)]
            c.set("Initialized", False, now, "ContainersNotInitialized",
                  f"containers with incomplete status: [{' '.join(pending)}]")
        unready = [x.name for x in self.ctrs.values() if x.kind != "init" and not x.ready]
        reason = "PodCompleted" if self.phase == "Succeeded" else "ContainersNotReady"
        msg = None if self.phase == "Succeeded" else f"containers with unready status: [{' '.join(unready)}]"
        c.set("ContainersReady", not unready and not terminal, now, reason, msg)
        gates = [g["conditionType"] for g in self.pod["spec"].get("readinessGates") or []]
        api = {x["type"]: x["status"] for x in (self.pod.get("status") or {}).get("conditions") or []}
        missing = [g for g in gates if api.get(g) != "True"]
        if unready or terminal:
            c.set("Ready", False, now, reason, msg)
        elif missing:
            c.set("Ready", False, now, "ReadinessGatesNotReady",
                  f"corresponding condition of pod readiness gate \"{missing[0]}\" does not exist.")
        else:
            c.set("Ready", True, now)
        return c.to_list()

    def _push_status(self, now: float) -> None:
        if self.foreign:
            return
        host = self.agent.defn.host_address
        st = {"phase": self.phase, "conditions": self._conditions(now), "hostIP": host, "hostIPs": [{"ip": host}]}
        if self.sandbox.ip:
            st["podIP"], st["podIPs"] = self.sandbox.ip, [{"ip": self.sandbox.ip}]
        if self.start_time:
            st["startTime"] = rfc3339(self.start_time)
        if self.reason:
            st["reason"], st["message"] = self.reason, self.message
        st["containerStatuses"] = [c.to_status() for c in self.apps]
        if self.inits:
            st["initContainerStatuses"] = [c.to_status() for c in self.inits]
        gen = self.pod["metadata"].get("generation")
        if gen:
            st["observedGeneration"] = gen
        if st == self.last_sent:
            return
        try:
            got = self.agent.kube.patch(pod_path(self.ns, self.name, "status"),
                                        {"metadata": {"uid": self.uid}, "status": st}, SMP)
            self.last_sent = st
            if got.get("metadata", {}).get("uid") == self.uid:
                self.pod = dict(self.pod, status=got.get("status", {}))
        except ApiError as e:
            if e.status == 404:
                return
            log.warning("%s/%s: status update failed: %s", self.ns, self.name, e)
            self.last_sent = None
            self.next_wake = min(self.next_wake, now + RETRY)
