"""One local test bed for all deliberate-break runs (they install and remove the operator themselves); the
local-gpu cluster, so the GPU test has a GPU node to break on, or the one RAYCONF_BREAK_BED names for the cases
that need another (`Case(bed=...)`: local-was, which serves Kubernetes' alpha Workload API)."""
from __future__ import annotations

import os

import pytest

DEFAULT_BED = "local-gpu"
BED_ENV = "RAYCONF_BREAK_BED"
BED_DEFINITION = os.environ.get(BED_ENV) or DEFAULT_BED


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
