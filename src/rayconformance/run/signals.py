"""Stopping a run as CI stops it: SIGTERM and SIGHUP act as Ctrl-C does.

CI systems cancel a job with SIGTERM (then SIGKILL after a grace period), a closed terminal sends SIGHUP, and a
job started in the background has SIGINT ignored. In a conformance run each of them raises KeyboardInterrupt in
the process that gets it, so the running test is reported as interrupted, the report is written and the run's
namespaces, operator and cluster are taken down (rayconformance.run.finish); a second one during that clean-up skips to
taking the cluster down, which no signal interrupts (`deferred`). The controller passes the stop on to its xdist
workers as SIGINT, as a terminal's Ctrl-C reaches the whole process group.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def install(forward_to_workers: bool) -> None:
    """Make every stop signal raise KeyboardInterrupt in this (main) thread."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        if forward_to_workers:
            for pid in children():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGINT)
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)


def children() -> list[int]:
    """The processes whose parent is this one and which share its process group: xdist's workers, which a
    terminal's Ctrl-C reaches too. Not the local bed's processes (started in sessions of their own): stopped by a
    signal they would go before the run's clean-up, which needs the API server, has used them."""
    me, group, found = os.getpid(), os.getpgrp(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and int(fields[2]) == group:
            found.append(int(stat.parent.name))
    return found


@contextlib.contextmanager
def deferred():
    """No stop signal interrupts what runs inside (taking the cluster down must finish)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
