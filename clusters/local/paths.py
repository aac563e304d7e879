"""Where the local test bed keeps things: the versioned tool cache (kept) and per-cluster state (removed on teardown)."""
from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("RAYCONF_CACHE", "/var/cache/rayconformance"))
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


def versions() -> dict[str, str]:
    """The pinned versions from versions.env (KEY=value lines)."""
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v.split(" #", 1)[0].strip().strip('"')
    return out


def tool(component: str, binary: str, version: str | None = None) -> Path:
    """Path of a built binary in the cache, e.g. tool('kubernetes', 'kube-apiserver')."""
    v = version or versions()[f"{component.upper()}_VERSION"]
    return CACHE / f"{component}-{v}" / "bin" / binary


def state_dir(cluster: str) -> Path:
    return STATE_ROOT / cluster
