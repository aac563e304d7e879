"""What the RayJob tests observe: status fields, the submitter Job and its Pods, and the job's RayCluster."""
from __future__ import annotations

from kubernetes import client

from rayconformance.fixtures import ray


def status(obj: dict | None) -> dict:
    return (obj or {}).get("status") or {}


def describe(obj: dict | None) -> str:
    s = status(obj)
    return (f"jobStatus={s.get('jobStatus')!r}, jobDeploymentStatus={s.get('jobDeploymentStatus')!r}, "
            f"reason={s.get('reason')!r}, rayClusterName={s.get('rayClusterName')!r}, message={str(s.get('message'))[:200]!r}")


def submitter_pods(api: client.ApiClient, namespace: str, rayjob: str) -> list:
    """Pods of the submitter Kubernetes Job(s) owned by the RayJob (found through the Job's ownerReference)."""
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    jobs = [j for j in batch.list_namespaced_job(namespace).items
            if any(o.kind == "RayJob" and o.name == rayjob for o in j.metadata.owner_references or [])]
    out = []
    for j in jobs:
        sel = ",".join(f"{k}={v}" for k, v in (j.spec.selector.match_labels or {}).items())
        out += core.list_namespaced_pod(namespace, label_selector=sel).items
    return sorted(out, key=lambda p: p.metadata.creation_timestamp)


def submitter_jobs(api: client.ApiClient, namespace: str, rayjob: str) -> list:
    return [j for j in client.BatchV1Api(api).list_namespaced_job(namespace).items
            if any(o.kind == "RayJob" and o.name == rayjob for o in j.metadata.owner_references or [])]


def cluster_exists(api: client.ApiClient, namespace: str, name: str | None) -> bool:
    return bool(name) and ray.RayResources(api, namespace, "RayCluster").get(name) is not None


def ray_clusters(api: client.ApiClient, namespace: str) -> list[dict]:
    return ray.RayResources(api, namespace, "RayCluster").list()
