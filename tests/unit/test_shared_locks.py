"""A lock file filelock shares with a shell script's flock(1): the node agent's FileLock on
`<cache>/venvs/.ray-<version>.lock` (clusters/local/nodeagent/images.py) and ray-venv.sh's `flock 9` on the same
file exclude each other only while both lock one inode, so filelock must keep the file when it releases it (3.30 and
later; 3.21 to 3.29 unlink it: a script waiting on the old inode and a FileLock creating a new one both get in)."""
from __future__ import annotations

import fcntl
import os
import re
import tomllib
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

ROOT = Path(__file__).resolve().parents[2]
KEEPS_ITS_FILE = (3, 30)  # the first filelock whose Unix lock leaves its file in place on release


def test_the_declared_filelock_floor_keeps_the_lock_file():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floor = next(re.fullmatch(r"filelock\s*>=\s*([0-9.]+)", d.split(";")[0].strip()) for d in deps
                 if d.startswith("filelock"))
    assert floor, f"pyproject.toml: filelock needs a `>=` floor ({deps})"
    assert tuple(int(x) for x in floor.group(1).split(".")[:2]) >= KEEPS_ITS_FILE, \
        f"filelock>={floor.group(1)} admits versions that unlink the lock file on release (ray-venv.sh shares it): " \
        f"declare filelock>={'.'.join(map(str, KEEPS_ITS_FILE))}"


def test_a_filelock_and_a_shell_flock_on_the_same_file_exclude_each_other(tmp_path):
    path = tmp_path / ".ray-2.46.0.lock"
    with FileLock(path):
        pass
    assert path.exists(), "filelock removed its file on release: a flock(1) waiting on it would hold a stale inode"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)  # as `( ... ) 9>FILE; flock 9` opens and locks it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(Timeout):
            FileLock(path).acquire(timeout=0)
    finally:
        os.close(fd)
    with FileLock(path, timeout=0):
        pass


def test_a_negative_bed_lock_wait_does_not_wait(monkeypatch, tmp_path):
    """RAYCONF_LOCK_WAIT below 0 means: do not wait (filelock alone would wait without end)."""
    import time

    from rayconformance.clusters.local import controlplane, testbed

    lock_file = tmp_path / "bed.lock"
    monkeypatch.setattr(testbed, "LOCK_FILE", lock_file)
    monkeypatch.setenv("RAYCONF_LOCK_WAIT", "-1")
    bed = testbed.TestBed.__new__(testbed.TestBed)
    held = FileLock(lock_file, thread_local=False)
    held.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(controlplane.ControlPlaneError, match="another local test bed"):
            bed._lock()
        assert time.monotonic() - started < 5
    finally:
        held.release()
