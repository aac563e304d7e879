"""The stop signal reaches the run's xdist workers (children in its process group), not the local bed's processes
(children in sessions of their own), which must outlive the run's clean-up."""
from __future__ import annotations

import subprocess
import sys

from rayconformance.run import signals


def test_children_are_those_of_the_process_group_only():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    bed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        found = signals.children()
        assert worker.pid in found and bed.pid not in found, (worker.pid, bed.pid, found)
    finally:
        for p in (worker, bed):
            p.kill()
            p.wait()
