"""The local bed's process sweep (`procs.kill_strays`) kills only the bed's own processes: those carrying its
env marker, not another run's processes started from the same tool cache."""
from __future__ import annotations

import shutil
import subprocess

from rayconformance.clusters.local import procs


def test_kill_strays_spares_processes_without_the_bed_marker(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    sleep = cache / "sleep"
    shutil.copy(shutil.which("sleep"), sleep)
    state = tmp_path / "state"
    ours = procs.spawn(state, "ours", [str(sleep), "300"])
    other = subprocess.Popen([str(sleep), "300"], start_new_session=True)  # e.g. a kind run's kubectl
    try:
        assert procs.BED_MARKER in procs.environ_keys(ours)
        killed = procs.kill_strays([cache])
        assert not procs.alive(ours), "the bed's own process from the tool cache should have been killed"
        assert other.poll() is None, "a process from the tool cache without the bed's marker was killed"
        assert killed == 1, f"expected one process killed, observed {killed}"
    finally:
        procs.stop_pid(ours, grace=1)
        other.kill()
        other.wait()
