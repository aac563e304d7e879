"""What the RayCluster tests observe: the cluster's Pods by role, their readiness, and Ray's own node list."""
from __future__ import annotations

from kubernetes import client

from rayconformance.fixtures import ray


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


def is_provisioned(obj: dict | None) -> bool:
    c = ray.condition(obj, "RayClusterProvisioned")
    return c is not None and c["status"] == "True"


def create_provisioned(api: client.ApiClient, namespace: str, body: dict, timeout: float) -> tuple[ray.RayResources, dict]:
    """Create the RayCluster and wait for RayClusterProvisioned=True; returns its resources and the object."""
    from rayconformance.fixtures.waiting import wait_for

    rc = ray.RayResources(api, namespace, "RayCluster")
    name = body["metadata"]["name"]
    rc.create(body)
    obj = wait_for(lambda: (is_provisioned(o := rc.get(name)), o), timeout,
                   f"RayCluster {name} to report RayClusterProvisioned=True",
                   observe=lambda: f"{ray.describe_conditions(rc.get(name))}; Pods: "
                   f"{describe_pods(pods(api, namespace, name))}")
    return rc, obj


def run_ray_job(api: client.ApiClient, namespace: str, svc: str, code: str, timeout: float) -> str:
    """Run Python code in the Ray cluster as a Ray job (Jobs API on the head Service); its logs on success."""
    import uuid

    from rayconformance.fixtures.waiting import wait_for

    sid = f"rc-{uuid.uuid4().hex[:8]}"
    wait_for(lambda: (ray.submit_job(api, namespace, svc, f'python -c "{code}"', sid)[0] == 200, True), timeout,
             "the Jobs API to accept a submission", observe=lambda: ray.job_status(api, namespace, svc, sid))
    st = wait_for(lambda: ((s := ray.job_status(api, namespace, svc, sid)) in ("SUCCEEDED", "FAILED", "STOPPED"), s),
                  timeout, f"Ray job {sid} to finish", observe=lambda: ray.job_status(api, namespace, svc, sid))
    logs = ray.job_logs(api, namespace, svc, sid)
    assert st == "SUCCEEDED", f"Ray job {sid} ended {st}, expected SUCCEEDED; logs:\n{logs[-2000:]}"
    return logs
