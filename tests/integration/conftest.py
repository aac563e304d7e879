"""Node-side integration tests share one test bed per cluster definition (see bedkit.Beds)."""
from __future__ import annotations

import pytest

from bedkit import Beds


@pytest.fixture(scope="session")
def beds():
    b = Beds()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def cpu(beds):
    return beds.get("local-cpu")


@pytest.fixture()
def ns(cpu, request):
    name = cpu.test_namespace(request)
    yield name
    cpu.delete_namespace(name)
