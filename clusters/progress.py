"""Progress of a long step (a build, a bring-up, an install, image loads) on the terminal: its time so far and,
from how long it took the last time, about how long is left.

`Step(what, estimate)` is a context manager: on a terminal it rewrites one status line every second while the step
runs and leaves one line saying how long it took (a step over within the first second leaves nothing); where
stderr is not a terminal (CI logs, pipes, pytest capture) or in a pytest-xdist worker (the controller owns the
terminal) it writes nothing. A step inside another (a build on first use during an install) has the line to itself
until it ends; `say` writes a line of its own without breaking the status line.

Build times live in the tool cache's `logs/build-times.tsv` (UTC time, what, version, seconds; one line per real
build, written by the build scripts). On a terminal the build scripts pipe each component's build through this file
run as a script (it imports nothing of the project, so it runs before the virtualenv exists):

    python3 clusters/progress.py relay WHAT KEY TIMES_FILE    # e.g. relay "building kubernetes" kubernetes ...

which passes the build's output through and shows WHAT with the time left from the last build of KEY.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

PREFIX = "rayconformance: "
CLEAR = "\r\033[K"  # to the line's start, erase it
_lock = threading.Lock()
_steps: list["Step"] = []  # the steps running, innermost last: only it writes its status line


def clock(seconds: float) -> str:
    """m:ss, or h:mm:ss from an hour on."""
    s = max(0, round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def status(what: str, elapsed: float, estimate: float | None = None) -> str:
    """The line shown while a step runs."""
    if not estimate:
        return f"{what}: {clock(elapsed)}"
    if elapsed <= estimate:
        return f"{what}: {clock(elapsed)}, about {clock(estimate - elapsed)} left"
    return f"{what}: {clock(elapsed)}, {clock(elapsed - estimate)} longer than the last time ({clock(estimate)})"


def finished(what: str, elapsed: float, ok: bool | None = True) -> str:
    """The line a step leaves (ok None: its outcome is not known here)."""
    return f"{what}: {'done in' if ok else 'took' if ok is None else 'failed after'} {clock(elapsed)}"


class Step:
    """Show a long step's progress on the terminal while the `with` block runs (nothing elsewhere)."""

    def __init__(self, what: str, estimate: float | None = None, stream: TextIO | None = None,
                 interval: float = 1.0, now: Callable[[], float] = time.monotonic, knows_outcome: bool = True):
        self.what, self.estimate, self.interval, self.now = what, estimate, interval, now
        self.knows_outcome = knows_outcome  # False: the block ends the same way whether the step failed or not
        self.stream = stream if stream is not None else sys.stderr
        self.shown = _isatty(self.stream) and not os.environ.get("PYTEST_XDIST_WORKER")
        self.wrote = False  # a status line was shown: the step then leaves its final line
        self.started = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Step":
        self.started = self.now()
        if self.shown:
            with _lock:
                _steps.append(self)
            self._thread = threading.Thread(target=self._tick, name="rayconformance-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval)
        if self.shown:
            with _lock:
                if self in _steps:
                    _steps.remove(self)
            if self.wrote:
                ok = exc_type is None if self.knows_outcome else None
                self._write(CLEAR + PREFIX + finished(self.what, self.now() - self.started, ok) + "\n")

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with _lock:
                innermost = bool(_steps) and _steps[-1] is self
            if innermost:
                self.wrote = True
                self._write(CLEAR + PREFIX + status(self.what, self.now() - self.started, self.estimate))

    def _write(self, text: str) -> None:
        try:
            with _lock:
                self.stream.write(text)
                self.stream.flush()
        except (OSError, ValueError):  # the terminal went away (a closed pipe, a closed file): stay quiet
            self.shown = False


def say(text: str, stream: TextIO | None = None) -> None:
    """Write one line; while a step shows its status line, in its place (the status comes back at its next tick)."""
    stream = stream if stream is not None else sys.stderr
    with _lock:
        busy = any(s.wrote for s in _steps)
        try:
            stream.write((CLEAR if busy and _isatty(stream) else "") + text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def last_seconds(times: Path, what: str) -> float | None:
    """How long the last real build of `what` (any version) took, from a build-times file; None if never."""
    try:
        lines = times.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        cols = line.split("\t")
        if len(cols) == 4 and cols[1] == what:
            try:
                return float(cols[3])
            except ValueError:
                continue
    return None


def relay(what: str, key: str, times: Path, lines, out: TextIO) -> None:
    """Pass `lines` through to `out` while showing the step."""
    with Step(what, last_seconds(times, key), knows_outcome=False):  # the build's exit status is the script's
        for line in lines:
            say(line.rstrip("\n"), stream=out)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "relay":
        sys.stderr.write("usage: progress.py relay WHAT KEY TIMES_FILE (the build's output on stdin)\n")
        return 2
    relay(argv[1], argv[2], Path(argv[3]), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
