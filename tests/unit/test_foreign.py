"""Which processes are not the run's, and the CPU they used over a window, read from a fake /proc."""
from __future__ import annotations

from pathlib import Path

from rayconformance.run import foreign


def process(proc: Path, pid: int, ppid: int, own: int = 0, reaped: int = 0, start: int | None = None,
            environ: bytes = b"", cgroup: str = "1:cpu:/\n") -> None:
    d = proc / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    fields = ["S", str(ppid)] + ["0"] * 9 + [str(own), "0", str(reaped), "0"] + ["0"] * 4 + [str(start or 1000 + pid)]
    (d / "stat").write_text(f"{pid} (a (prog)) " + " ".join(fields) + "\n")
    (d / "environ").write_bytes(environ)
    (d / "cgroup").write_text(cgroup)


def gone(proc: Path, pid: int) -> None:
    for f in (proc / str(pid)).iterdir():
        f.unlink()
    (proc / str(pid)).rmdir()


def test_the_run_its_descendants_marked_processes_and_containers_are_not_foreign(tmp_path):
    process(tmp_path, 50, 1)  # the run
    process(tmp_path, 51, 50)  # its worker
    process(tmp_path, 52, 1, environ=b"HOME=/\0RAYCONFORMANCE_RUN=r1\0")  # a helper of the run, orphaned
    process(tmp_path, 60, 1, environ=b"RAYCONFORMANCE_POD=uid")  # a Pod's process
    process(tmp_path, 61, 60)  # a retitled Ray worker of that Pod: its environment no longer says
    process(tmp_path, 70, 1, cgroup="4:cpu:/docker/abc\n")  # a kind node's process
    process(tmp_path, 80, 1)  # a load generator
    process(tmp_path, 81, 80)  # its child
    process(tmp_path, 90, 2)  # a kernel thread
    snap = foreign.Ownership(tmp_path, root=50).snapshot()
    assert sorted(p.pid for p in snap.values() if p.foreign) == [80, 81]


def test_foreign_ticks_count_new_processes_whole_and_no_reaped_lifetime(tmp_path):
    process(tmp_path, 50, 1)  # the run
    process(tmp_path, 80, 1, own=100)  # a load generator, 1 s of CPU before the window
    process(tmp_path, 81, 80, own=300)  # its child, 3 s before the window
    process(tmp_path, 82, 1, own=100, environ=b"RAYCONFORMANCE_BED=/run/x")  # a bed daemon, orphaned
    process(tmp_path, 1, 0, own=10)  # init
    ownership = foreign.Ownership(tmp_path, root=50)
    start = ownership.snapshot()
    process(tmp_path, 80, 1, own=600, reaped=350)  # 5 s of its own; reaped the child, which had run 0.5 s more
    gone(tmp_path, 81)
    process(tmp_path, 83, 80, own=200)  # a new child: 2 s, all in the window
    process(tmp_path, 1, 0, own=20, reaped=3100)  # init reaped the bed daemon (31 s in its life)
    gone(tmp_path, 82)
    end = ownership.snapshot()
    assert foreign.foreign_ticks(start, end) == 500 + 50 + 200 + 10  # init's own 0.1 s counts, its reaping does not


def test_a_reused_pid_is_another_process(tmp_path):
    process(tmp_path, 50, 1)
    process(tmp_path, 80, 50, own=100, start=5)  # a child of the run
    ownership = foreign.Ownership(tmp_path, root=50)
    start = ownership.snapshot()
    assert not any(p.foreign for p in start.values())
    process(tmp_path, 80, 1, own=40, start=9)  # the pid now belongs to a process that is not the run's
    end = ownership.snapshot()
    assert [p.pid for p in end.values() if p.foreign] == [80] and foreign.foreign_ticks(start, end) == 40


def test_processes_of_the_runs_own_container_are_not_counted_as_the_clusters(tmp_path, monkeypatch):
    process(tmp_path, 50, 1, cgroup="4:cpu:/docker/ours\n")
    process(tmp_path, 80, 1, cgroup="4:cpu:/docker/ours\n")  # another job in the runner's container
    process(tmp_path, 70, 1, cgroup="4:cpu:/docker/kind-node\n")  # a kind node beside it
    monkeypatch.setattr(foreign.os, "getpid", lambda: 50)
    snap = foreign.Ownership(tmp_path, root=50).snapshot()
    assert sorted(p.pid for p in snap.values() if p.foreign) == [80]
