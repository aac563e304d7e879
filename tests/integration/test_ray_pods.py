"""A Ray head and a worker, as plain Pods shaped the way KubeRay (v1.5) writes them, form one Ray cluster."""
from __future__ import annotations

import time

import pytest

from bedkit import pod_processes, ready, until
from rayconformance.clusters.toolcache import versions

pytestmark = pytest.mark.integration

RAY = versions().get("RAY_VERSION", "2.46.0")
CLUSTER = "raycluster-conf"
HEAD_SVC = f"{CLUSTER}-head-svc"
OBJ_STORE = "100000000"


def ray_env(group: str) -> list[dict]:
    """The env KubeRay adds to the Ray container (fieldRefs included)."""
    return [
        {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
        {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "RAY_CLOUD_INSTANCE_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RAY_NODE_TYPE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}}},
        {"name": "RAY_PORT", "value": "6379"},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"},
    ]


def probe(cmd: str, timeout: int, failure: int, delay: int) -> dict:
    return {"exec": {"command": ["bash", "-c", cmd]}, "initialDelaySeconds": delay, "timeoutSeconds": timeout,
            "periodSeconds": 5, "successThreshold": 1, "failureThreshold": failure}


RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"


def labels(node_type: str, group: str) -> dict:
    return {"ray.io/cluster": CLUSTER, "ray.io/node-type": node_type, "ray.io/group": group,
            "ray.io/is-ray-node": "yes", "ray.io/identifier": f"{CLUSTER}-{node_type}",
            "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}


def head_pod() -> dict:
    start = (f"ulimit -n 65536; ray start --head  --block  --dashboard-agent-listen-port=52365  "
             f"--dashboard-host=0.0.0.0  --metrics-export-port=8080  --num-cpus=1  --memory=2147483648  "
             f"--object-store-memory={OBJ_STORE} ")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{CLUSTER}-head-", "labels": labels("head", "headgroup"),
                         "annotations": {"ray.io/ft-enabled": "false"}},
            "spec": {"restartPolicy": "Always", "containers": [{
                "name": "ray-head", "image": f"rayproject/ray:{RAY}",
                "command": ["/bin/bash", "-c", "--"], "args": [start],
                "env": ray_env("headgroup") + [{"name": "RAY_ADDRESS", "value": "127.0.0.1:6379"},
                                               {"name": "KUBERAY_GEN_RAY_START_CMD", "value": start.split("; ", 1)[1]}],
                "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}, {"containerPort": 8080, "name": "metrics"}],
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
                "readinessProbe": probe(f"{RAYLET} && {GCS}", 5, 10, 10),
                "livenessProbe": probe(f"{RAYLET} && {GCS}", 5, 120, 30),
                "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}]}],
                "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}}


def worker_pod(ns: str) -> dict:
    fqdn = f"{HEAD_SVC}.{ns}.svc.cluster.local"
    start = (f"ulimit -n 65536; ray start  --address={fqdn}:6379  --block  --dashboard-agent-listen-port=52365  "
             f"--metrics-export-port=8080  --num-cpus=1  --memory=2147483648  --object-store-memory={OBJ_STORE} ")
    wait_gcs = (f"SECONDS=0; while true; do if (( SECONDS <= 120 )); then if ray health-check --address {fqdn}:6379 "
                f"> /dev/null 2>&1; then echo \"GCS is ready.\"; break; fi; echo \"$SECONDS seconds elapsed: "
                f"Waiting for GCS to be ready.\"; else if ray health-check --address {fqdn}:6379; then echo \"GCS is "
                f"ready. Any error messages above can be safely ignored.\"; break; fi; echo \"$SECONDS seconds elapsed:"
                f" Still waiting for GCS to be ready.\"; fi; sleep 5; done")
    env = ray_env("workers") + [{"name": "FQ_RAY_IP", "value": fqdn}, {"name": "RAY_IP", "value": HEAD_SVC},
                                {"name": "RAY_ADDRESS", "value": f"{fqdn}:6379"}]
    mounts = [{"name": "shared-mem", "mountPath": "/dev/shm"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{CLUSTER}-workers-worker-", "labels": labels("worker", "workers")},
            "spec": {"restartPolicy": "Always",
                     "initContainers": [{"name": "wait-gcs-ready", "image": f"rayproject/ray:{RAY}",
                                         "command": ["/bin/bash", "-lc", "--"], "args": [wait_gcs], "env": env,
                                         "volumeMounts": mounts,
                                         "resources": {"limits": {"cpu": "200m", "memory": "256Mi"},
                                                       "requests": {"cpu": "200m", "memory": "256Mi"}}}],
                     "containers": [{
                         "name": "ray-worker", "image": f"rayproject/ray:{RAY}",
                         "command": ["/bin/bash", "-c", "--"], "args": [start], "env": env,
                         "ports": [{"containerPort": 8080, "name": "metrics"}],
                         "resources": {"limits": {"cpu": "1", "memory": "2Gi"},
                                       "requests": {"cpu": "1", "memory": "2Gi"}},
                         "readinessProbe": probe(RAYLET, 2, 10, 10),
                         "livenessProbe": probe(RAYLET, 2, 120, 30),
                         "volumeMounts": mounts}],
                     "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}}


def test_ray_head_and_worker_form_a_cluster(cpu, ns):
    cpu.create(ns, {"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": HEAD_SVC, "labels": {"ray.io/cluster": CLUSTER}},
                    "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                             "selector": {k: v for k, v in labels("head", "headgroup").items()
                                          if k in ("ray.io/cluster", "ray.io/node-type", "ray.io/identifier")},
                             "ports": [{"name": "gcs-server", "port": 6379}, {"name": "dashboard", "port": 8265},
                                       {"name": "client", "port": 10001}, {"name": "metrics", "port": 8080}]}})
    t0 = time.time()
    head = cpu.create(ns, head_pod())["metadata"]["name"]
    worker = cpu.create(ns, worker_pod(ns))["metadata"]["name"]
    h = cpu.wait_pod(ns, head, ready, 300, "Ray head Ready")
    t_head = time.time() - t0
    w = cpu.wait_pod(ns, worker, ready, 300, "Ray worker Ready")
    print(f"\nRay head Ready {t_head:.1f}s after creation, worker Ready after {time.time() - t0:.1f}s")
    assert w["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert "GCS is ready" in cpu.logs(ns, worker, "wait-gcs-ready")

    proxy = f"/api/v1/namespaces/{ns}/services/{HEAD_SVC}:8265/proxy"

    def alive_nodes():
        try:
            r = cpu.kube.get(f"{proxy}/nodes", {"view": "summary"})
        except Exception:  # noqa: BLE001 - dashboard still starting
            return None
        rows = r.get("data", {}).get("summary", [])
        alive = [x for x in rows if (x.get("raylet") or {}).get("state") == "ALIVE"]
        return alive if len(alive) == 2 else None
    nodes = until(alive_nodes, 120, "two ALIVE Ray nodes via the apiserver's services/proxy")
    ips = sorted(x["raylet"]["nodeManagerAddress"] for x in nodes)
    assert ips == sorted([h["status"]["podIP"], w["status"]["podIP"]]), nodes
    status = cpu.kube.request("GET", f"{proxy}/api/cluster_status")
    assert status.get("result") is True, status
    # the head's /dev/shm is the Memory emptyDir sized from sizeLimit; Ray's logs are readable via pods/log
    assert "Ray runtime started" in cpu.logs(ns, head, "ray-head")

    uids = [h["metadata"]["uid"], w["metadata"]["uid"]]
    for name in (worker, head):
        cpu.delete_pod(ns, name, grace=5)
    for name in (worker, head):
        cpu.wait_gone(ns, name, 60)
    assert not any(pod_processes(u) for u in uids)
