"""Where the local test bed keeps its own things: per-cluster state (removed on teardown), the one-bed-per-machine
lock, and whether the shared tool cache (clusters/toolcache.py) is usable by the bed's Pods."""
from __future__ import annotations

import os
from pathlib import Path

from ..toolcache import CACHE

STATE_ROOT = Path(os.environ.get("RAYCONF_STATE", "/run/rayconformance"))
# One test bed at a time on a machine: ports and addresses are fixed.
LOCK_FILE = Path(os.environ.get("RAYCONF_LOCK", "/run/rayconformance.lock"))


def cache_problem(cache: Path = CACHE) -> str | None:
    """Why the bed cannot use `cache` as its tool cache, or None. Each bed Pod gets its own private /tmp, so a
    cache under /tmp is invisible inside Pods (the operator's binary, the Ray venvs)."""
    if cache.resolve().is_relative_to("/tmp"):
        return (f"the tool cache {cache} (RAYCONF_CACHE) is under /tmp, which every bed Pod sees as its own private "
                f"directory, so Pods could not run what it holds; set RAYCONF_CACHE to a directory outside /tmp "
                f"(e.g. /var/tmp/rayconformance)")
    return None


def state_dir(cluster: str) -> Path:
    return STATE_ROOT / cluster
