"""Building a cached component on first use: `ensure("kuberay", "v1.6.1", "bin/ray-operator")` returns its
directory in the tool cache, running `build-tools.sh kuberay@v1.6.1` first when it is not there yet (its output
goes to `<cache>/logs/build-<component>-<version>.log`). So a run builds only what it needs: the selected
profile's operator, and the Gateway implementation only when a test installs it.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from .paths import CACHE, HERE


class ToolBuildError(RuntimeError):
    """A component could not be built; the message names it and its build log."""


def ensure(component: str, version: str, marker: str) -> Path:
    """The cache directory `<component>-<version>`, built unless `marker` (a path inside it) exists."""
    directory = CACHE / f"{component}-{version}"
    if (directory / marker).exists():
        return directory
    log = CACHE / "logs" / f"build-{component}-{version}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(f"rayconformance: building {component} {version} into {directory} (first use; log {log})\n")
    started = time.monotonic()
    with log.open("w") as out:
        r = subprocess.run(["bash", str(HERE / "build-tools.sh"), f"{component}@{version}"], stdout=out,
                           stderr=subprocess.STDOUT)
    if r.returncode != 0 or not (directory / marker).exists():
        last = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:] or ["no output"]
        raise ToolBuildError(f"building {component} {version} failed (exit {r.returncode}): {last[0].strip()}; "
                             f"see {log}")
    sys.stderr.write(f"rayconformance: built {component} {version} in {time.monotonic() - started:.0f}s\n")
    return directory
