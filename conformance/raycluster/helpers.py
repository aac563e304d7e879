"""What the RayCluster tests observe: the cluster's Pods by role, their readiness, and Ray's own node list."""
from __future__ import annotations

from kubernetes import client

from fixtures import ray


def pods(api: client.ApiClient, namespace: str, cluster: str, node_type: str | None = None) -> list:
    sel = f"ray.io/cluster={cluster}" + (f",ray.io/node-type={node_type}" if node_type else "")
    return client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=sel).items


def running_ready(pod) -> bool:
    if pod.status.phase != "Running" or pod.metadata.deletion_timestamp:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def describe_pods(items) -> str:
    return ", ".join(f"{p.metadata.name}:{p.status.phase}{'/Ready' if running_ready(p) else ''}"
                     f"{'/Terminating' if p.metadata.deletion_timestamp else ''}" for p in items) or "no Pods"


def alive_ray_nodes(api: client.ApiClient, namespace: str, obj: dict) -> tuple[int | None, str]:
    """Number of ALIVE nodes Ray's dashboard reports, via the head Service; None when it does not answer."""
    svc = ((obj.get("status") or {}).get("head") or {}).get("serviceName")
    if not svc:
        return None, "status.head.serviceName not set"
    code, body = ray.proxy_get(api, namespace, svc, "dashboard", "nodes?view=summary")
    data = ray.json_or_none(body) if code == 200 else None
    if not data:
        return None, f"dashboard HTTP {code}: {body[:200]}"
    nodes = data.get("data", {}).get("summary", [])
    alive = [n for n in nodes if (n.get("raylet") or {}).get("state") == "ALIVE"]
    return len(alive), f"{len(alive)} alive of {len(nodes)} Ray nodes"
