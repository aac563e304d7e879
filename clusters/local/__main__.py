"""Command line for the local test bed: `python -m rayconformance.clusters.local up|down|status [--cluster local-gpu]`."""
from __future__ import annotations

import argparse
import sys
import time

from .. import definition
from . import DEFAULT_CLUSTER, controlplane, network
from .testbed import TestBed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rayconformance.clusters.local", description=__doc__)
    ap.add_argument("command", choices=["up", "down", "status"])
    ap.add_argument("--cluster", default=DEFAULT_CLUSTER, help="cluster definition name or path")
    ap.add_argument("--control-plane-only", action="store_true", help="no nodes, DNS or kube-proxy")
    a = ap.parse_args(argv)
    try:
        bed = TestBed(definition.load(a.cluster))
        if a.command == "up":
            r = bed.up(nodes=not a.control_plane_only)
            phases = ", ".join(f"{k} {v}s" for k, v in r.phases.items())
            print(f"test bed '{bed.defn.name}' up in {r.seconds}s ({phases})")
            print(f"export KUBECONFIG={r.kubeconfig}")
            bed._held = None  # keep running after this process exits; `down` cleans up
        elif a.command == "down":
            t = time.monotonic()
            bed.down()
            print(f"test bed '{bed.defn.name}' down in {time.monotonic() - t:.1f}s")
        else:
            left = network.leftovers()
            print(f"state: {bed.state} ({'present' if bed.state.exists() else 'absent'})")
            print("leftovers: " + (", ".join(left) if left else "none"))
    except (definition.DefinitionError, controlplane.ControlPlaneError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
