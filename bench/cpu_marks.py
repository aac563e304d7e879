"""A pytest plugin for bench/cpu.py (`-p bench.cpu_marks`): in the process that runs each test (an xdist worker, or
pytest itself without xdist) it appends `{"pid", "nodeid", "start", "stop"}` (epoch seconds, setup to teardown) to the
file named by RAYCONF_CPU_MARKS, so the bench can charge that process's CPU to the test it was running. It only
observes; without the variable it does nothing."""
from __future__ import annotations

import json
import os
import time

import pytest

MARKS_ENV = "RAYCONF_CPU_MARKS"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    try:
        return (yield)
    finally:
        path = os.environ.get(MARKS_ENV)
        if path:
            line = json.dumps({"pid": os.getpid(), "nodeid": item.nodeid, "start": start, "stop": time.time()})
            with open(path, "a") as f:
                f.write(line + "\n")
