"""The versioned tool cache, shared by every provider: its root (`RAYCONF_CACHE`), the pinned versions
(clusters/local/versions.env), a component's `<component>-<version>` directory and its built binaries.

`ensure("kuberay", "v1.6.1", "bin/ray-operator")` returns a component's directory, running
`clusters/local/build-tools.sh kuberay@v1.6.1` first when it is not there yet (its output goes to
`<cache>/logs/build-<component>-<version>.log`; on a terminal its progress shows, with the time left from the
component's last build, recorded in `<cache>/logs/build-times.tsv`). So a run builds only what it needs: the
selected profile's operator, and the Gateway implementation only when a test installs it.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from filelock import FileLock

from .progress import Step, last_seconds, say

CACHE = Path(os.environ.get("RAYCONF_CACHE", "/var/cache/rayconformance"))
BUILDER = Path(__file__).resolve().parent / "local"  # build-tools.sh and the versions.env it pins
BUILD_SCRIPT = BUILDER / "build-tools.sh"
BUILD_TIMES = "build-times.tsv"  # in <cache>/logs, written by build-tools.sh (clusters/progress.py relay)


class ToolBuildError(RuntimeError):
    """A component could not be built; the message names it and its build log."""


def ensure(component: str, version: str, marker: str, env: dict[str, str] | None = None) -> Path:
    """The cache directory `<component>-<version>`, built unless `marker` (a path inside it) exists. One build
    at a time per component and version (a lock next to its log); a waiting caller then finds it built. `env`
    is passed to the build (e.g. KUBERAY_BASE and KUBERAY_PATCH for a patched operator)."""
    directory = CACHE / f"{component}-{version}"
    if (directory / marker).exists():
        return directory
    log = CACHE / "logs" / f"build-{component}-{version}.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(log.with_suffix(".lock")):
            if not (directory / marker).exists():
                _build(component, version, directory / marker, log, env or {})
    except OSError as e:
        raise ToolBuildError(f"building {component} {version}: {e.strerror or e} ({e.filename or log}); "
                             "run `make tools` as root") from None
    return directory


def _build(component: str, version: str, marker: Path, log: Path, env: dict[str, str]) -> None:
    say(f"rayconformance: building {component} {version} (first use; log {log})")
    started = time.monotonic()
    with Step(f"building {component} {version}", last_build_seconds(component)) as step:
        with log.open("w") as out:
            r = subprocess.run(["bash", str(BUILD_SCRIPT), f"{component}@{version}"], stdout=out,
                               stderr=subprocess.STDOUT, env={**os.environ, **env})
        if r.returncode != 0 or not marker.exists():
            last = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:] or ["no output"]
            raise ToolBuildError(f"building {component} {version} failed (exit {r.returncode}): {last[0].strip()}; "
                                 f"see {log}")
    seconds = time.monotonic() - started
    if not step.wrote:  # on a terminal the step's own line said it
        say(f"rayconformance: built {component} {version} in {seconds:.0f}s")


def last_build_seconds(what: str) -> float | None:
    """How long the last real build of `what` (any version) took; None if never recorded."""
    return last_seconds(CACHE / "logs" / BUILD_TIMES, what)


def versions() -> dict[str, str]:
    """The pinned versions from versions.env (KEY=value lines)."""
    out = {}
    for line in (BUILDER / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v.split(" #", 1)[0].strip().strip('"')
    return out


def tool(component: str, binary: str, version: str | None = None) -> Path:
    """Path of a built binary in the cache, e.g. tool('kubernetes', 'kube-apiserver')."""
    v = version or versions()[f"{component.upper()}_VERSION"]
    return CACHE / f"{component}-{v}" / "bin" / binary
