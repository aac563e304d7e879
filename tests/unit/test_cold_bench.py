"""bench/cold.py times `make conformance`'s setup as the Makefile does it: its steps are setup-base's prerequisites,
and it names the parts their output times."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import cold  # noqa: E402


def test_the_steps_are_the_makefiles():
    makefile = (ROOT / "Makefile").read_text()
    prereqs = re.search(r"^setup-base:(.*)$", makefile, re.M).group(1).split()
    assert [argv for _, argv in cold.setup_steps()] == [["make", t] for t in prereqs]
    for t in prereqs:
        assert re.search(rf"^{re.escape(t)}:", makefile, re.M), f"no target {t}"
        assert t in cold.STEP_NAMES, f"name the step {t} in bench/cold.py's STEP_NAMES"
    assert re.search(r"^conformance: setup-base\b", makefile, re.M)


def test_the_parts_a_step_times():
    out = ("14:06:37 build-tools: building etcd v3.6.14\n"
           "14:07:00 build-tools: kubernetes modules fetched ahead in 45s\n"
           "14:08:35 build-tools: etcd built in 118s -> /var/cache/rayconformance/etcd-v3.6.14/bin\n"
           "ray-venv: ray 2.60.0 ready in 95s -> /var/cache/rayconformance/venvs/ray-2.60.0\n"
           "build-tools: kuberay v1.6.1 built in 80s -> /x\n"
           "venv: project venv ready in 103s\n")
    assert cold.parts(out) == ["kubernetes: modules fetched ahead (in the background) in 45s", "etcd: built in 118s",
                               "Ray 2.60.0 venv: ready in 95s (beside the Go builds)", "kuberay v1.6.1: built in 80s",
                               "project venv: ready in 103s (beside the Go builds)"]
