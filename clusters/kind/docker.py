"""Whether a Docker engine answers on this machine (DOCKER_HOST's unix socket, else the default one): what decides
that a run uses kind by default, and that `make` builds no offline kind image for it (the engine pulls the public
ones). Standard library only, so `make` asks before the virtualenv exists:

    python3 clusters/kind/docker.py     # prints the socket that answered; nothing when none does
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

DOCKER_SOCKET = Path("/var/run/docker.sock")


def answers(socket_path: Path = DOCKER_SOCKET, timeout: float = 2.0) -> str | None:
    """Where a Docker engine answers its ping, or None (a remote DOCKER_HOST counts as none: name kind yourself)."""
    host = os.environ.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return None
    path = Path(host.removeprefix("unix://")) if host else socket_path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = s.recv(64)
    except OSError:
        return None
    return str(path) if answer.startswith(b"HTTP/1.") and b" 200 " in answer else None


if __name__ == "__main__":
    found = answers()
    if found:
        print(found)
    sys.exit(0)
