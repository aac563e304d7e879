"""Measure the local test bed's build and bring-up: the tool build (cold, or `cached` when warm) and a warm
bring-up and teardown of the control plane alone and of the whole test bed.

    .venv/bin/python bench/local_bringup.py [--cluster local-cpu] [--repeat 2]

The cold build time is what `build-tools.sh` prints on a machine without the cache (it prints per component
`built in Ns`); here it is re-run, so a warm cache shows how fast a second run skips the build.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from rayconformance.clusters import definition
from rayconformance.clusters.local.testbed import TestBed
from rayconformance.clusters.toolcache import BUILD_SCRIPT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cluster", default="local-cpu")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    t = time.monotonic()
    out = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
    print(f"tool build: {time.monotonic() - t:.1f}s (exit {out.returncode})")
    for line in out.stdout.splitlines():
        print(f"  {line}")
    for nodes, label in ((False, "control plane only"), (True, "whole test bed")):
        ups, downs = [], []
        for _ in range(a.repeat):
            bed = TestBed(definition.load(a.cluster))
            r = bed.up(nodes=nodes)
            ups.append(r.seconds)
            t = time.monotonic()
            bed.down()
            downs.append(time.monotonic() - t)
            print(f"{label}: up {r.seconds:.2f}s {r.phases}, down {downs[-1]:.2f}s")
        print(f"{label}: median up {statistics.median(ups):.2f}s, median down {statistics.median(downs):.2f}s")


if __name__ == "__main__":
    main()
