"""The local test bed's faults that need no bed: killing a container's PID 1 found in the node agent's record."""
from __future__ import annotations

import subprocess

import pytest

from rayconformance.clusters.local import faults
from rayconformance.clusters.local.nodeagent import procutil
from rayconformance.clusters.local.nodeagent.store import write_json


def record(state, uid: str, container: str, pid: int | None, start: int | None) -> None:
    proc = None if pid is None else {"pid1": pid, "pid1_start": start}
    write_json(state / "nodeagent" / "pods" / f"{uid}.json", {"containers": {container: {"proc": proc}}})


def test_kill_container_kills_the_pid_1_the_record_names(tmp_path):
    p = subprocess.Popen(["sleep", "300"])
    try:
        record(tmp_path, "u1", "ray-job-submitter", p.pid, procutil.start_time(p.pid))
        faults.kill_container(tmp_path, "u1", "head", "ray-job-submitter")
        assert p.wait(timeout=10) == -9
    finally:
        p.kill()


@pytest.mark.parametrize("pid, start", [(None, None), (1, -1)])  # no process; a pid that is another process now
def test_a_container_not_running_is_one_line(tmp_path, pid, start):
    record(tmp_path, "u2", "ray-job-submitter", pid, start)
    with pytest.raises(RuntimeError, match="container ray-job-submitter of Pod head is not running"):
        faults.kill_container(tmp_path, "u2", "head", "ray-job-submitter")
    with pytest.raises(RuntimeError, match="container other of Pod head is not running"):
        faults.kill_container(tmp_path, "u2", "head", "other")
    with pytest.raises(RuntimeError, match="is not running"):
        faults.kill_container(tmp_path, "no-such-pod", "head", "ray-job-submitter")
