"""Container logs over HTTPS at each Node's kubelet endpoint, so `pods/log` works through the apiserver.

Serves `GET /containerLogs/<namespace>/<pod>/<container>` with `follow`, `tailLines`, `limitBytes` and
`previous` (the run before the current one). Log files hold the raw stdout+stderr of each run; `timestamps` and
`sinceSeconds`/`sinceTime` are accepted and ignored (no per-line timestamps are recorded). Clients must present a
certificate from the test bed's CA (the apiserver's kubelet-client certificate does).
"""
from __future__ import annotations

import logging
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

log = logging.getLogger("nodeagent.logs")


def tail(data: bytes, lines: int) -> bytes:
    if lines < 0:
        return data
    if lines == 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "rayconformance-nodeagent"

    def log_message(self, fmt, *args) -> None:  # quiet
        log.debug("logs: " + fmt, *args)

    def _error(self, code: int, msg: str) -> None:
        body = msg.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        url = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        if parts == ["healthz"]:
            return self._error(200, "ok")
        if len(parts) != 4 or parts[0] != "containerLogs":
            return self._error(404, f"not found: {url.path}")
        _, ns, pod, ctr = parts
        agent, node = self.server.agent, self.server.node  # type: ignore[attr-defined]
        w = agent.find_pod(ns, pod, node)
        if w is None:
            return self._error(404, f'pod "{pod}" in namespace "{ns}" not found on node {node}')
        if ctr not in w.ctrs:
            return self._error(400, f'container "{ctr}" in pod "{pod}" is not valid')
        previous = q.get("previous", "false") == "true"
        f = w.log_file(ctr, previous)
        if f is None:
            if previous:
                return self._error(400, f'previous terminated container "{ctr}" in pod "{pod}" not found')
            reason = (w.ctrs[ctr].state.get("waiting") or {}).get("reason", "ContainerCreating")
            return self._error(400, f'container "{ctr}" in pod "{pod}" is waiting to start: {reason}')
        follow = q.get("follow", "false") == "true" and not previous
        limit = int(q["limitBytes"]) if q.get("limitBytes", "").isdigit() else None
        lines = int(q["tailLines"]) if q.get("tailLines", "").lstrip("-").isdigit() else -1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        sent = 0
        try:
            with open(f, "rb") as fh:
                data = tail(fh.read(), lines)
                if limit is not None:
                    data = data[:limit]
                self.wfile.write(data)
                self.wfile.flush()
                sent += len(data)
                while follow and (limit is None or sent < limit):
                    chunk = fh.read(65536)
                    if chunk:
                        if limit is not None:
                            chunk = chunk[:limit - sent]
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        sent += len(chunk)
                        continue
                    if w.log_file(ctr, False) != Path(f) or not w.container_running(ctr):
                        rest = fh.read()
                        if rest:
                            self.wfile.write(rest)
                        break
                    time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass


class LogServer:
    def __init__(self, agent, node_name: str, host: str, port: int, pki: Path):
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.agent = agent  # type: ignore[attr-defined]
        self.httpd.node = node_name  # type: ignore[attr-defined]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki / "nodeagent-serving.crt", pki / "nodeagent-serving.key")
        ctx.load_verify_locations(pki / "ca.crt")
        ctx.verify_mode = ssl.CERT_REQUIRED
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name=f"logs-{port}")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
