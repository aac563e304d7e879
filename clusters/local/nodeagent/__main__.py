"""`python -m rayconformance.clusters.local.nodeagent --cluster <definition> --state <dir>`: run the node agent (root)."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .. import section
from . import agent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rayconformance.clusters.local.nodeagent", description=__doc__)
    ap.add_argument("--cluster", required=True, help="cluster definition name or path")
    ap.add_argument("--state", required=True, type=Path, help="the test bed's state dir (admin.kubeconfig, pki/)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    agent.main(section.load(a.cluster), a.state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
