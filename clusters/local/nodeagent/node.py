"""Node registration, Lease renewal (every 10 s) and node status (Ready and friends, every 60 s, and at once
when a device plugin's capacity changes)."""
from __future__ import annotations

import logging
import platform
import threading
import time
from pathlib import Path

from .kube import ApiError, MERGE, SMP
from .status import rfc3339
from ..section import LocalSection, NodeDef
from ...toolcache import versions

log = logging.getLogger("nodeagent.node")
LEASE_SECONDS, RENEW_EVERY, STATUS_EVERY = 40, 10.0, 60.0
BASE_PORT = 10250


def kubelet_port(node: NodeDef) -> int:
    """Each Node shares the host address, so each gets its own kubelet port (10250 + index)."""
    return BASE_PORT + node.index


def capacity(node: NodeDef, extended: dict[str, int]) -> dict:
    """The Node's capacity (= allocatable): the definition's, plus the extended resources its device plugins
    report (e.g. `nvidia.com/gpu`)."""
    cap = {"cpu": "16", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    cap.update({k: str(v) for k, v in node.capacity.items()})
    cap.update({k: str(v) for k, v in extended.items()})
    return cap


def _read(path: str, default: str = "") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


class NodeManager(threading.Thread):
    def __init__(self, agent, node: NodeDef):
        super().__init__(daemon=True, name=f"node-{node.name}")
        self.agent, self.node = agent, node
        self.defn: LocalSection = agent.defn
        self.kube = agent.kube
        self.registered = threading.Event()
        self.changed = threading.Event()  # set when the status must be posted now (device capacity changed)

    def object(self) -> dict:
        n, d = self.node, self.defn
        cidr = d.node_pod_cidr(n)
        labels = {"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
                  "rayconformance.io/node-agent": "true", **{k: str(v) for k, v in n.labels.items()}}
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n.name, "labels": labels,
                             "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}

    def status(self) -> dict:
        n, d = self.node, self.defn
        now = rfc3339(time.time())
        cap = capacity(n, self.agent.devices.capacity(n.name))
        k8s = versions().get("KUBERNETES_VERSION", "v0.0.0")

        def cond(t, status, reason, msg):
            return {"type": t, "status": status, "reason": reason, "message": msg,
                    "lastHeartbeatTime": now, "lastTransitionTime": self.agent.started_at_rfc}
        return {
            "capacity": cap, "allocatable": dict(cap),
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": d.host_address}, {"type": "Hostname", "address": n.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port(n)}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id", "0" * 32), "systemUUID": n.name,
                "bootID": _read("/proc/sys/kernel/random/boot_id"), "kernelVersion": platform.release(),
                "osImage": "rayconformance node agent (host processes)", "operatingSystem": "linux",
                "architecture": "amd64", "containerRuntimeVersion": "rayconformance://0.1.0",
                "kubeletVersion": k8s, "kubeProxyVersion": k8s,
            },
        }

    def register(self) -> None:
        path = f"/api/v1/nodes/{self.node.name}"
        obj = self.object()
        try:
            self.kube.create("/api/v1/nodes", obj)
        except ApiError as e:
            if e.status != 409:
                raise
            cur = self.kube.get(path)
            if cur["spec"].get("podCIDR") not in (None, obj["spec"]["podCIDR"]):
                self.kube.delete(path)  # podCIDR is immutable: re-register
                self.kube.create("/api/v1/nodes", obj)
            else:
                self.kube.patch(path, {"metadata": {"labels": obj["metadata"]["labels"]}, "spec": obj["spec"]}, MERGE)
        self.post_status()
        self.renew_lease()
        self.registered.set()
        log.info("node %s registered (podCIDR %s, kubelet port %d)", self.node.name, obj["spec"]["podCIDR"],
                 kubelet_port(self.node))

    def post_status(self) -> None:
        self.kube.patch(f"/api/v1/nodes/{self.node.name}/status", {"status": self.status()}, SMP)

    def renew_lease(self) -> None:
        name = self.node.name
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
        now = time.time()
        micro = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
        spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": micro}
        try:
            self.kube.patch(path, {"spec": spec}, MERGE)
        except ApiError as e:
            if e.status != 404:
                raise
            node = self.kube.get(f"/api/v1/nodes/{name}")
            self.kube.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]},
                "spec": spec})

    def run(self) -> None:
        while not self.agent.stopping.is_set():
            try:
                self.register()
                break
            except Exception as e:  # noqa: BLE001 - the apiserver may still be starting
                log.warning("node %s: registration failed: %s", self.node.name, e)
                self.agent.stopping.wait(1)
        last_lease = last_status = time.monotonic()
        while not self.agent.stopping.is_set():
            self.changed.wait(max(0.0, min(last_lease + RENEW_EVERY, last_status + STATUS_EVERY) - time.monotonic()))
            if self.agent.stopping.is_set():
                break
            try:
                now = time.monotonic()
                if now - last_lease >= RENEW_EVERY:
                    self.renew_lease()
                    last_lease = now
                if self.changed.is_set() or now - last_status >= STATUS_EVERY:
                    self.changed.clear()
                    self.post_status()
                    last_status = now
            except Exception as e:  # noqa: BLE001 - keep beating; re-register if the Node was deleted
                log.warning("node %s: heartbeat failed: %s", self.node.name, e)
                self.changed.set()  # post the status again once the apiserver answers
                self.agent.stopping.wait(1)
                try:
                    if self.kube.get_or_none(f"/api/v1/nodes/{self.node.name}") is None:
                        self.register()
                except Exception:  # noqa: BLE001
                    pass
