"""The prober manager: startup, liveness and readiness probers of each container run, and what their results do.

A failed liveness or startup probe marks the container for a kill (with the probe's grace period, if it sets
one); a successful startup probe enables the other two; readiness and `started` follow the results. The probers
themselves (one thread per probe) are in `probes`. Mixed into `PodWorker` (podworker.py), whose state it uses.
"""
from __future__ import annotations

from . import probes
from .status import CState


class ProberManager:
    probers: dict[str, list[probes.Prober]]
    probe_state: dict[str, dict]  # per container: the latest result per probe kind, and "kill" when one failed

    def _on_probe(self, name: str, run: int, kind: str, ok: bool, msg: str) -> None:
        c = self.ctrs.get(name)
        if c is None or c.proc is None or c.proc.run != run:
            return
        st = self.probe_state.setdefault(name, {})
        st[kind] = ok
        if kind == "startup" and ok:
            for p in self.probers.get(name, []):
                p.enabled.set()
        if not ok:
            self.event("Warning", "Unhealthy", f"{kind.capitalize()} probe failed: {msg}"[:1000],
                       f"spec.containers{{{name}}}")
            if kind in ("liveness", "startup"):
                st["kill"] = f"Container {name} failed {kind} probe, will be restarted"
        self.kick()

    def _start_probers(self, c: CState, adopted: bool = False) -> None:
        """Probers for the container's current run; an adopted run keeps its readiness and started state."""
        if not adopted:
            self.probe_state[c.name] = {}
        spec = self.spec_of(c.name)
        proc = c.proc
        target = probes.Target(self.sandbox.ip or self.agent.defn.host_address, spec, proc)
        ps = []
        startup = spec.get("startupProbe")
        started = c.started if adopted else not startup
        for kind in ("startup", "liveness", "readiness"):
            p = spec.get(f"{kind}Probe")
            if not p or (kind == "startup" and started):
                continue
            pr = probes.Prober(kind, p, target, proc.started_at,
                               lambda k, ok, msg, n=c.name, r=proc.run: self._on_probe(n, r, k, ok, msg))
            if kind == "startup" or started:
                pr.enabled.set()
            if adopted and kind == "readiness":
                pr.result = c.ready
                self.probe_state.setdefault(c.name, {})["readiness"] = c.ready
            ps.append(pr)
            pr.start()
        self.probers[c.name] = ps

    def _stop_probers(self, name: str) -> None:
        for p in self.probers.pop(name, []):
            p.stop()

    def _stop_all_probers(self) -> None:
        for name in list(self.probers):
            self._stop_probers(name)

    def _apply_probe_kills(self) -> None:
        for c in self.ctrs.values():
            msg = self.probe_state.get(c.name, {}).pop("kill", None)
            if msg and c.is_running and c.name not in self.killing:
                self.event("Normal", "Killing", msg, self._fieldpath(c))
                self._kill_container(c, self._grace(probe_failed=c.name))

    def _update_readiness(self) -> None:
        for c in self.ctrs.values():
            if not c.is_running:
                c.ready = False
                continue
            spec = self.spec_of(c.name)
            st = self.probe_state.get(c.name, {})
            if spec.get("startupProbe") and not c.started:
                c.started = bool(st.get("startup"))
            if spec.get("readinessProbe"):
                c.ready = c.started and bool(st.get("readiness"))
            else:
                c.ready = c.started
