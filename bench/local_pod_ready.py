"""Measure Pod start-up on the local test bed: time from Pod creation to Ready.

    .venv/bin/python bench/local_pod_ready.py [--cluster local-cpu] [--repeat 3] [--kubeconfig PATH]

Without --kubeconfig it brings up its own test bed (waiting for the machine's test-bed lock) and tears it down
afterwards. Measured: a plain Pod (busybox `sleep`, no probes), a Pod with a readiness probe (python http.server,
httpGet every second), and a Ray head Pod shaped like KubeRay's (its exec readiness probe has
initialDelaySeconds 10, so Ready can never come sooner; the time until the dashboard answers is printed too).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from rayconformance.clusters import definition
from rayconformance.clusters.local.nodeagent.kube import ApiError, Kube
from rayconformance.clusters.toolcache import versions
from rayconformance.testing.waiting import wait_until

INTERVAL = 0.05  # seconds between two looks: the resolution of the times measured


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def _gcs_healthy(ip: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{ip}:8265/api/gcs_healthz", timeout=0.5) as r:
            return b"success" in r.read()
    except OSError:
        return False


def measure(kube: Kube, ns: str, pod: dict, timeout: float = 300, dashboard: bool = False) -> dict:
    """Seconds from creation to Running and to Ready (and, for Ray, to the dashboard's GCS health answering)."""
    name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/{ns}/pods"
    t0 = time.monotonic()
    kube.create(path, pod)
    out: dict[str, float] = {}

    def check():
        p = kube.get(f"{path}/{name}")
        st = p.get("status") or {}
        now = time.monotonic() - t0
        if "running" not in out and st.get("phase") == "Running":
            out["running"] = now
        if dashboard and "dashboard" not in out and st.get("podIP") and _gcs_healthy(st["podIP"]):
            out["dashboard"] = time.monotonic() - t0
        if _ready(p):
            out["ready"] = now
        return "ready" in out
    wait_until(check, bool, f"Pod {name} to be Ready", timeout, interval=INTERVAL)
    out.setdefault("running", out["ready"])
    if dashboard:
        out.setdefault("dashboard", out["ready"])
    kube.delete(f"{path}/{name}", {"gracePeriodSeconds": 0})
    wait_until(lambda: kube.get_or_none(f"{path}/{name}") is None, bool, f"Pod {name} to go", 60, interval=INTERVAL)
    return out


def ray_head(name: str, ray: str) -> dict:
    start = ("ulimit -n 65536; ray start --head --block --dashboard-host=0.0.0.0 --num-cpus=1 "
             "--object-store-memory=100000000 --dashboard-agent-listen-port=52365 --metrics-export-port=8080")
    check = ("wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success && "
             "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"ray.io/node-type": "head"}},
            "spec": {"containers": [{
                "name": "ray-head", "image": f"rayproject/ray:{ray}", "command": ["/bin/bash", "-c", "--"],
                "args": [start], "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                "readinessProbe": {"exec": {"command": ["bash", "-c", check]}, "initialDelaySeconds": 10,
                                   "timeoutSeconds": 5, "periodSeconds": 5, "failureThreshold": 10},
                "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}]}],
                "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}}


def run(kube: Kube, repeat: int) -> None:
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    wait_until(lambda: kube.get_or_none(f"/api/v1/namespaces/{ns}/serviceaccounts/default"), bool,
               f"the default ServiceAccount of {ns}", 60, interval=INTERVAL)
    cases = {
        "plain Pod (busybox sleep, no probes)": lambda i: {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"plain-{i}"},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}},
        "Pod with httpGet readiness probe (python http.server)": lambda i: {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"http-{i}"},
            "spec": {"containers": [{"name": "c", "image": "python:3.11",
                                     "command": ["python3", "-m", "http.server", "8080"],
                                     "readinessProbe": {"httpGet": {"port": 8080, "path": "/"},
                                                        "periodSeconds": 1}}]}},
        "Ray head Pod (KubeRay-style, readiness initialDelaySeconds 10)": lambda i: ray_head(
            f"ray-head-{i}", versions().get("RAY_VERSION", "2.46.0")),
    }
    try:
        for label, make in cases.items():
            runs = [measure(kube, ns, make(i), dashboard=label.startswith("Ray")) for i in range(repeat)]

            def med(key: str) -> str:
                return f"{statistics.median(r[key] for r in runs):.2f}s"
            extra = f", creation->GCS healthy (dashboard answers) median {med('dashboard')}" if "dashboard" in runs[0] \
                else ""
            per_run = ", ".join(f"{r['ready']:.2f}" for r in runs)
            print(f"{label}: creation->Running median {med('running')}{extra}, creation->Ready median {med('ready')} "
                  f"(Ready per run: {per_run})", flush=True)
    finally:
        try:
            kube.delete(f"/api/v1/namespaces/{ns}")
        except ApiError:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/local_pod_ready.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster", default="local-cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kubeconfig", type=Path, help="use a running test bed instead of bringing one up")
    a = ap.parse_args(argv)
    if a.kubeconfig:
        run(Kube(a.kubeconfig), a.repeat)
        return 0
    from rayconformance.clusters.local.testbed import TestBed
    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    bed = TestBed(definition.load(a.cluster))
    r = bed.up()
    print(f"test bed '{bed.defn.name}' up in {r.seconds}s ({', '.join(f'{k} {v}s' for k, v in r.phases.items())})",
          flush=True)
    try:
        run(Kube(r.kubeconfig), a.repeat)
    finally:
        bed.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
