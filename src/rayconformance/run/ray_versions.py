"""Which features a run's Ray version is too old for: a feature's `min_ray` (src/rayconformance/features/) newer
than the Ray the run uses makes its tests unsupported, whatever claims it."""
from __future__ import annotations

from rayconformance import features


def ray_release(version: str) -> tuple[int, ...]:
    """`2.52.0` -> (2, 52, 0), for comparing Ray releases."""
    return tuple(int(p) for p in version.split("."))


def ray_too_old(names, ray_version: str | None) -> list[str]:
    """Those of the features `names` that need a newer Ray than `ray_version` (none when the run's Ray version is
    unknown)."""
    if not ray_version:
        return []
    return [n for n in names
            if (m := features.BY_NAME[n].min_ray) is not None and ray_release(ray_version) < ray_release(m)]


def ray_version_reason(names, ray_version: str | None) -> str | None:
    """Why a test needing features `names` cannot run with Ray `ray_version`, or None."""
    old = ray_too_old(names, ray_version)
    if not old:
        return None
    mins = {features.BY_NAME[n].min_ray for n in old}
    needs = (f"needs Ray >= {mins.pop()}" if len(mins) == 1
             else ", ".join(f"{n} needs Ray >= {features.BY_NAME[n].min_ray}" for n in old))
    return f"unsupported feature(s): {', '.join(old)} ({needs}; this run uses Ray {ray_version})"
