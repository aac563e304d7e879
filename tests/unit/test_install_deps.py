"""clusters/local/install-deps.sh installs missing Debian packages as root, or through `sudo -n` where sudo needs no
password (a CI runner's user), and otherwise says in one line what to run. Run against fake dpkg-query, id, sudo and
apt-get: nothing is installed."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "clusters" / "local" / "install-deps.sh"


def fake_bin(tmp_path: Path, uid: int, sudo_works: bool) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "log"
    scripts = {
        "dpkg-query": "exit 1",  # nothing installed
        "id": f'[ "$1" = -u ] && echo {uid}',
        "apt-get": f'echo "apt-get $* DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >> {log}',
        "sudo": (f'echo "sudo $*" >> {log}; [ "$1" = -n ] || exit 1; shift; exec "$@"' if sudo_works
                 else 'echo "sudo: a password is required" >&2; exit 1'),
    }
    for name, body in scripts.items():
        (bindir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bindir / name).chmod(0o755)
    return bindir


def install(tmp_path: Path, uid: int, sudo_works: bool) -> tuple[subprocess.CompletedProcess, list[str]]:
    bindir = fake_bin(tmp_path, uid, sudo_works)
    r = subprocess.run(["bash", str(SCRIPT), "pkg-a", "pkg-b"], capture_output=True, text=True,
                       env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    log = tmp_path / "log"
    return r, log.read_text().splitlines() if log.exists() else []


def test_root_installs_directly(tmp_path):
    r, log = install(tmp_path, 0, sudo_works=False)
    assert r.returncode == 0, r.stderr
    assert log == ["apt-get update -qq DEBIAN_FRONTEND=noninteractive",
                   "apt-get install -y -qq --no-install-recommends pkg-a pkg-b DEBIAN_FRONTEND=noninteractive"]


def test_a_user_with_passwordless_sudo_installs_through_it(tmp_path):
    r, log = install(tmp_path, 1001, sudo_works=True)
    assert r.returncode == 0, r.stderr
    assert "(with sudo)" in r.stdout
    assert log == ["sudo -n true",
                   "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
                   "apt-get update -qq DEBIAN_FRONTEND=noninteractive",
                   "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pkg-a "
                   "pkg-b",
                   "apt-get install -y -qq --no-install-recommends pkg-a pkg-b DEBIAN_FRONTEND=noninteractive"]


def test_a_user_without_sudo_is_told_what_to_run_in_one_line(tmp_path):
    r, log = install(tmp_path, 1001, sudo_works=False)
    assert r.returncode == 2 and not log
    assert r.stderr.count("\n") == 1, r.stderr
    assert "need root to install: pkg-a pkg-b" in r.stderr and "sudo apt-get install -y pkg-a pkg-b" in r.stderr
