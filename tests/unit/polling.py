"""Short polling for unit tests that wait on threads and child processes (no cluster, no tenacity)."""
from __future__ import annotations

import time


def wait_until(predicate, timeout: float = 20.0, what: str = "condition", interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
