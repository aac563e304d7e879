"""One local test bed for all deliberate-break runs (they install and remove the operator themselves); the
local-gpu cluster, so the GPU test has a GPU node to break on."""
from __future__ import annotations

import os

import pytest

BED_DEFINITION = "local-gpu"


@pytest.fixture(scope="session")
def bed_kubeconfig():
    from rayconformance.clusters import definition
    from rayconformance.clusters.local.testbed import TestBed

    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    bed = TestBed(definition.load(BED_DEFINITION))
    r = bed.up()
    try:
        yield r.kubeconfig
    finally:
        bed.down()
