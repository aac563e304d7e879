"""Probes (startup, liveness, readiness) and lifecycle hooks (postStart, preStop), as a kubelet runs them.

exec runs inside the container's namespaces (nsenter into its PID 1); httpGet and tcpSocket connect from the
host to the Pod IP, like the kubelet. One thread per probe per container run; results go back through a callback.
"""
from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
import time

from . import containers

log = logging.getLogger("nodeagent.probes")


class Target:
    """What a probe or hook acts on: one container run in one Pod."""

    def __init__(self, pod_ip: str, ctr: dict, proc: containers.Proc):
        self.pod_ip, self.ctr, self.proc = pod_ip, ctr, proc

    def port(self, port) -> int:
        if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
            return int(port)
        for p in self.ctr.get("ports") or []:
            if p.get("name") == port:
                return int(p["containerPort"])
        raise ValueError(f"named port {port!r} not found in container {self.ctr['name']}")


def run_handler(h: dict, t: Target, timeout: float) -> tuple[bool, str]:
    """Run one probe/hook handler; (success, message)."""
    try:
        if "exec" in h:
            rc, out = containers.exec_in(t.proc, h["exec"].get("command") or [], timeout)
            return rc == 0, out.strip()[-1024:] if rc != 0 else ""
        if "httpGet" in h:
            g = h["httpGet"]
            host = g.get("host") or t.pod_ip
            port = t.port(g.get("port"))
            if g.get("scheme", "HTTP").upper() == "HTTPS":
                conn = http.client.HTTPSConnection(host, port, timeout=timeout,
                                                   context=ssl._create_unverified_context())  # noqa: S323 as kubelet
            else:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            headers = {"User-Agent": "kube-probe/1.36", "Accept": "*/*"}
            for hd in g.get("httpHeaders") or []:
                headers[hd["name"]] = hd["value"]
            try:
                conn.request("GET", g.get("path") or "/", headers=headers)
                r = conn.getresponse()
                body = r.read(10240)
            finally:
                conn.close()
            ok = 200 <= r.status < 400
            return ok, "" if ok else f"HTTP probe failed with statuscode: {r.status} {body[:200]!r}"
        if "tcpSocket" in h:
            s = h["tcpSocket"]
            with socket.create_connection((s.get("host") or t.pod_ip, t.port(s.get("port"))), timeout=timeout):
                return True, ""
        if "grpc" in h:
            return False, "grpc probes are not supported by the local provider's node agent"
        if "sleep" in h:
            time.sleep(min(float(h["sleep"].get("seconds", 0)), timeout))
            return True, ""
    except (OSError, ValueError, http.client.HTTPException) as e:
        return False, str(e)
    return False, f"unsupported handler {sorted(h)}"


class Prober(threading.Thread):
    """Runs one probe for one container run; calls on_result(kind, ok, message) when the result flips."""

    def __init__(self, kind: str, probe: dict, target: Target, started_at: float, on_result):
        super().__init__(daemon=True, name=f"probe-{kind}-{target.ctr['name']}")
        self.kind, self.probe, self.target, self.started_at = kind, probe, target, started_at
        self.on_result = on_result
        self.stopped = threading.Event()
        self.enabled = threading.Event()  # liveness/readiness wait for the startup probe
        self.result: bool | None = {"liveness": True, "readiness": False, "startup": None}[kind]

    def stop(self) -> None:
        self.stopped.set()
        self.enabled.set()

    def run(self) -> None:
        p = self.probe
        delay = float(p.get("initialDelaySeconds", 0))
        period = max(float(p.get("periodSeconds", 10)), 1.0)
        timeout = max(float(p.get("timeoutSeconds", 1)), 1.0)
        ok_needed = int(p.get("successThreshold", 1))
        fail_needed = int(p.get("failureThreshold", 3))
        self.enabled.wait()
        wait = self.started_at + delay - time.time()
        if wait > 0 and self.stopped.wait(wait):
            return
        oks = fails = 0
        while not self.stopped.is_set():
            t0 = time.monotonic()
            ok, msg = run_handler(p, self.target, timeout)
            if self.stopped.is_set():
                return
            if ok:
                oks, fails = oks + 1, 0
            else:
                oks, fails = 0, fails + 1
            new = self.result
            if ok and oks >= ok_needed:
                new = True
            elif not ok and fails >= fail_needed:
                new = False
            if new != self.result:
                self.result = new
                self.on_result(self.kind, new, msg)
                if self.kind == "startup" and new:
                    return  # a startup probe stops once it has succeeded
                if self.kind in ("liveness", "startup") and not new:
                    return  # the container gets killed; a new run gets new probers
            if not ok and fails == 1:
                log.debug("%s probe of %s failed: %s", self.kind, self.target.ctr["name"], msg)
            self.stopped.wait(max(0.0, period - (time.monotonic() - t0)))
