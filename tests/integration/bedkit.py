"""Helpers for the node-side integration tests: one test bed at a time, API access, waiting, Pod processes."""
from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

from kubernetes import client, config

from rayconformance.clusters import definition
from rayconformance.clusters.local import nodes, procs
from rayconformance.clusters.local.nodeagent.kube import ApiError, Kube
from rayconformance.clusters.local.nodeagent.sandbox import MARKER
from rayconformance.clusters.local.testbed import TestBed
from rayconformance.testing.waiting import wait_for

os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")


class Beds:
    """Holds at most one test bed; switching definitions tears the current one down first."""

    def __init__(self):
        self.bed: TestBed | None = None
        self.cluster: Cluster | None = None
        self.attached = False

    def get(self, name: str) -> "Cluster":
        if self.bed is not None and self.bed.defn.name == name:
            return self.cluster
        if os.environ.get("RAYCONF_ITEST_ATTACH") == name:  # development: use a test bed someone holds up
            self.close()
            self.bed, self.cluster, self.attached = None, Cluster(TestBed(definition.load(name))), True
            return self.cluster
        self.close()
        bed = TestBed(definition.load(name))
        r = bed.up()
        print(f"\ntest bed {name} up in {r.seconds}s {r.phases}")
        self.bed, self.cluster = bed, Cluster(bed)
        return self.cluster

    def close(self) -> None:
        if self.bed is not None:
            bed, self.bed, self.cluster = self.bed, None, None
            bed.down()


class Cluster:
    def __init__(self, bed: TestBed):
        self.bed = bed
        self.defn = bed.defn
        self.state = bed.state
        self.kube = Kube(bed.kubeconfig)
        self.api = config.new_client_from_config(str(bed.kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)

    # -- namespaces and objects ---------------------------------------------------------------------------
    def test_namespace(self, request) -> str:
        """A namespace named after the requesting test."""
        return self.namespace(request.node.name.replace("_", "-")[:40].strip("-").lower())

    def namespace(self, prefix: str) -> str:
        ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
        until(lambda: self.kube.get_or_none(f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60,
              "default ServiceAccount")
        return ns

    def delete_namespace(self, ns: str) -> None:
        try:
            self.kube.delete(f"/api/v1/namespaces/{ns}")
        except ApiError:
            pass

    def create(self, ns: str, obj: dict) -> dict:
        kind = obj["kind"]
        path = {"Pod": f"/api/v1/namespaces/{ns}/pods", "Service": f"/api/v1/namespaces/{ns}/services",
                "ConfigMap": f"/api/v1/namespaces/{ns}/configmaps", "Secret": f"/api/v1/namespaces/{ns}/secrets",
                "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments",
                "Job": f"/apis/batch/v1/namespaces/{ns}/jobs"}[kind]
        return self.kube.create(path, obj)

    def pod(self, ns: str, name: str) -> dict | None:
        return self.kube.get_or_none(f"/api/v1/namespaces/{ns}/pods/{name}")

    def pods(self, ns: str, selector: str | None = None) -> list[dict]:
        q = {"labelSelector": selector} if selector else None
        return self.kube.get(f"/api/v1/namespaces/{ns}/pods", q)["items"]

    def wait_pod(self, ns: str, name: str, pred, timeout: float = 90, what: str = "") -> dict:
        def check():
            p = self.pod(ns, name)
            return p if p is not None and pred(p) else None
        return until(check, timeout, what or f"pod {ns}/{name}", lambda: _brief(self.pod(ns, name)))

    def wait_gone(self, ns: str, name: str, timeout: float = 90) -> None:
        until(lambda: self.pod(ns, name) is None, timeout, f"pod {ns}/{name} to be deleted",
              lambda: _brief(self.pod(ns, name)))

    def logs(self, ns: str, name: str, container: str | None = None, **kw) -> str:
        return self.core.read_namespaced_pod_log(name, ns, container=container, **kw)

    def delete_pod(self, ns: str, name: str, grace: int | None = None) -> None:
        body = {} if grace is None else {"gracePeriodSeconds": grace}
        self.kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}", body)


def ready(p: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or [])


def phase(*phases: str):
    return lambda p: (p.get("status") or {}).get("phase") in phases


def cstatus(p: dict, name: str | None = None) -> dict:
    sts = (p.get("status") or {}).get("containerStatuses") or []
    return next((s for s in sts if name is None or s["name"] == name), {})


def until(pred, timeout: float = 60, what: str = "", describe=None):
    """Poll pred() until it returns something truthy (which is returned); exceptions count as "not yet"."""
    def probe():
        v = pred()
        return bool(v), v
    return wait_for(probe, timeout, what, observe=describe, interval=0.25)


def _brief(p: dict | None):
    if p is None:
        return None
    st = p.get("status") or {}
    return {"phase": st.get("phase"), "node": p["spec"].get("nodeName"),
            "conditions": {c["type"]: c["status"] for c in st.get("conditions") or []},
            "containers": {c["name"]: (c.get("state"), c.get("restartCount"))
                           for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or [])}}


def pod_processes(uid: str) -> list[int]:
    """Host PIDs of every process of a Pod (they all carry the marker env var)."""
    want = f"{MARKER}={uid}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if want in (d / "environ").read_bytes().split(b"\0"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def pod_manifest(name: str, containers: list[dict], **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": spec.pop("labels", {})},
            "spec": {"containers": containers, **spec}}


def kill_agent(state: Path) -> None:
    """SIGKILL the node agent of the test bed whose state dir is `state`, and reap it."""
    agent = nodes.agent_pid(state)
    os.kill(agent, signal.SIGKILL)
    until(lambda: not procs.alive(agent), 10, "agent dead")
    try:
        os.waitpid(agent, 0)
    except ChildProcessError:
        pass
