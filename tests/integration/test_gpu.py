"""GPU nodes: nvidia.com/gpu capacity, scheduling only onto GPU nodes, distinct device IDs per container."""
from __future__ import annotations

import pytest

from bedkit import cstatus, phase, pod_manifest, until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gpu(beds):
    return beds.get("local-gpu")


def gpu_pod(name: str, n: int) -> dict:
    return pod_manifest(name, [{"name": "c", "image": "busybox",
                                "command": ["sh", "-c", "echo DEVICES=$NVIDIA_VISIBLE_DEVICES; sleep 3600"],
                                "resources": {"limits": {"nvidia.com/gpu": str(n)}}}],
                        terminationGracePeriodSeconds=1)


def devices_of(c, ns: str, name: str) -> list[str]:
    out = until(lambda: "DEVICES=" in c.logs(ns, name, "c") and c.logs(ns, name, "c"), 30, f"{name} output")
    return out.split("DEVICES=", 1)[1].split()[0].split(",")


def test_gpu_capacity_scheduling_and_device_ids(gpu):
    c = gpu
    nodes = {n.metadata.name: n for n in c.core.list_node().items}
    assert nodes["rc-gpu-1"].status.capacity["nvidia.com/gpu"] == "4"
    assert nodes["rc-gpu-1"].status.allocatable["nvidia.com/gpu"] == "4"
    assert "nvidia.com/gpu" not in (nodes["rc-node-1"].status.capacity or {})
    ns = c.namespace("gpu")
    try:
        c.create(ns, gpu_pod("one", 1))
        p = c.wait_pod(ns, "one", phase("Running"), 60)
        assert p["spec"]["nodeName"] == "rc-gpu-1"
        first = devices_of(c, ns, "one")
        assert len(first) == 1 and first[0].startswith("GPU-") and "rc-gpu-1" in first[0]

        c.create(ns, gpu_pod("two", 2))
        c.wait_pod(ns, "two", phase("Running"), 60)
        second = devices_of(c, ns, "two")
        assert len(second) == 2 and not set(first) & set(second)

        c.create(ns, gpu_pod("too-many", 2))  # only one device left: the scheduler keeps it Pending
        until(lambda: any(x["type"] == "PodScheduled" and x["status"] == "False" and x.get("reason") == "Unschedulable"
                          for x in (c.pod(ns, "too-many").get("status") or {}).get("conditions") or []), 30,
              "too-many Unschedulable")

        c.delete_pod(ns, "two")  # releases its two devices
        c.wait_gone(ns, "two", 60)
        p = c.wait_pod(ns, "too-many", phase("Running"), 90)
        third = devices_of(c, ns, "too-many")
        assert len(third) == 2 and not set(third) & set(first)
        assert all(d.startswith("GPU-") and "rc-gpu-1" in d for d in third)
        assert cstatus(p, "c")["ready"]
    finally:
        c.delete_namespace(ns)
