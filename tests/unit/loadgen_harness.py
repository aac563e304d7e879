"""Runs the load generator's script (samples/loadgen.yaml) as a local process against a local HTTP server that
breaks for a while: refusing connections (nothing listens), or holding requests unanswered and then closing their
connections. Used by test_loadgen.py, and to measure any other version of the script the same way."""
from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from .polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "loadgen.yaml"
BODY = b"v1 from local"


def script(sample_text: str | None = None) -> str:
    """The generator's Python script, from the sample's ConfigMap (this tree's, or `sample_text`)."""
    docs = yaml.safe_load_all(sample_text if sample_text is not None else SAMPLE.read_text())
    return next(d for d in docs if d and d["kind"] == "ConfigMap")["data"]["loadgen.py"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FlakyServer:
    """HTTP/1.1 on 127.0.0.1 answering BODY; after `down_after` answers it breaks for `down_for` seconds, then
    answers again. `mode` "refused": it stops listening, and a request on a connection kept from before is reset;
    "hang": it keeps accepting but holds every request until the break ends, then closes without answering."""

    def __init__(self, mode: str, down_after: int, down_for: float, port: int | None = None, listen: bool = True):
        self.mode, self.down_after, self.down_for = mode, down_after, down_for
        self.port = port or free_port()
        self.lock = threading.Lock()
        self.answers = self.answers_after = 0
        self.down, self.back, self.closed = threading.Event(), threading.Event(), threading.Event()
        self.down_at = self.back_at = None
        self.httpd = None
        if listen:
            self.listen()

    def listen(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - the stdlib's name
                if owner.down.is_set():
                    if owner.mode == "hang":
                        owner.back.wait(owner.down_for + 5)
                    else:  # a reset, as from a process that is gone
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)
                owner.answered()

            def log_message(self, *args):
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads, httpd.block_on_close = True, False
        self.httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answered(self) -> None:
        with self.lock:
            self.answers += 1
            if self.back.is_set():
                self.answers_after += 1
            if self.answers == self.down_after and not self.down.is_set():
                self.down.set()
                threading.Thread(target=self._break, daemon=True).start()

    def _break(self) -> None:
        self.down_at = time.monotonic()
        if self.mode == "refused":
            self.httpd.shutdown()
            self.httpd.server_close()
        self.closed.wait(self.down_for)  # the break's length (or until the server is closed)
        if self.mode == "refused" and not self.closed.is_set():
            self.listen()
        self.back_at = time.monotonic()
        self.down.clear()
        self.back.set()

    def close(self) -> None:
        self.closed.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()


class Generator:
    """The script as a child process; its stdout JSON lines collected as they come."""

    def __init__(self, code: str, tmp: Path, port: int, **env: str):
        path = tmp / "loadgen.py"
        path.write_text(code)
        self.lines: list[dict] = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-u", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "TARGET": f"http://127.0.0.1:{port}/", **env})
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                pass

    def final(self) -> dict | None:
        return next((s for s in self.lines if s.get("done")), None)

    def terminate(self, timeout: float = 15) -> dict | None:
        """SIGTERM, then its final line (waited for when the script prints one); the process is then killed."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            wait_until(lambda: self.final() is not None or self.proc.poll() is not None, timeout,
                       "the generator's final line")
        finally:
            self.kill()
        return self.final()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def run_with_break(code: str, tmp: Path, mode: str, rate: float, down_for: float, before: int, after: int,
                   timeout: float = 20) -> tuple[dict | None, dict | None, FlakyServer, Generator]:
    """The script sends `rate`/s to a FlakyServer that breaks (`mode`) for `down_for` s after `before` answers;
    once it has answered `after` more, the generator gets SIGTERM. Returns (its final line or None, its last
    line, the server, the generator)."""
    server = FlakyServer(mode, before, down_for)
    gen = Generator(code, tmp, server.port, RATE=str(rate), MAX_SECONDS="120", LINGER_S="30")
    try:
        wait_until(lambda: server.answers_after >= after, timeout, f"{after} answers after the break")
        last = gen.lines[-1] if gen.lines else None
        final = gen.terminate()
        return final, (gen.lines[-1] if gen.lines else last), server, gen
    finally:
        gen.kill()
        server.close()
