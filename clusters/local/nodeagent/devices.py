"""Extended-resource devices (fake GPUs) behind a small interface.

`DeviceSource` is all the Pod code uses: per-node capacity, allocate devices to one container (returning the env
that exposes them), release a Pod's devices. Its shape is that of the kubelet-side device-plugin manager
(`clusters/local/devices.py: DeviceManager`, one per node), so swapping `StaticGPUs` for it is an adapter that
routes by node. `StaticGPUs` serves IDs `GPU-<node>-<i>` straight from the cluster definition. Allocations are
persisted so an agent restart never hands a device out twice.
"""
from __future__ import annotations

import threading
from typing import Protocol

from kubernetes.utils.quantity import parse_quantity

from ..definition import ClusterDefinition

GPU = "nvidia.com/gpu"


class AdmissionError(RuntimeError):
    """Not enough devices: the Pod fails with reason UnexpectedAdmissionError, as with a kubelet."""


class DeviceSource(Protocol):
    resource: str

    def capacity(self, node: str) -> int: ...
    def allocate(self, node: str, pod_uid: str, container: str, count: int) -> dict[str, str]: ...
    def release(self, pod_uid: str) -> None: ...


class StaticGPUs:
    resource = GPU

    def __init__(self, defn: ClusterDefinition, store):
        self.ids = {n.name: [f"GPU-{n.name}-{i}" for i in range(n.gpus)] for n in defn.nodes}
        self.store = store
        self._lock = threading.Lock()
        self.allocated: dict[str, str] = dict(store.table("devices", {}))  # device id -> "<pod uid>/<container>"

    def capacity(self, node: str) -> int:
        return len(self.ids.get(node, []))

    def allocate(self, node: str, pod_uid: str, container: str, count: int) -> dict[str, str]:
        owner = f"{pod_uid}/{container}"
        with self._lock:
            mine = sorted(d for d, o in self.allocated.items() if o == owner)
            if len(mine) < count:
                free = [d for d in self.ids.get(node, []) if d not in self.allocated]
                need = count - len(mine)
                if len(free) < need:
                    raise AdmissionError(f"Allocate failed due to requested number of devices unavailable for "
                                         f"{GPU}. Requested: {count}, Available: {len(free)}")
                for d in free[:need]:
                    self.allocated[d] = owner
                self.store.save_table("devices", self.allocated)
                mine = sorted(mine + free[:need])
            return {"NVIDIA_VISIBLE_DEVICES": ",".join(mine[:count])} if count else {}

    def release(self, pod_uid: str) -> None:
        with self._lock:
            gone = [d for d, o in self.allocated.items() if o.startswith(f"{pod_uid}/")]
            for d in gone:
                del self.allocated[d]
            if gone:
                self.store.save_table("devices", self.allocated)


def requested(ctr: dict, resource: str) -> int:
    res = ctr.get("resources") or {}
    q = (res.get("limits") or {}).get(resource) or (res.get("requests") or {}).get(resource)
    return int(parse_quantity(str(q))) if q else 0
