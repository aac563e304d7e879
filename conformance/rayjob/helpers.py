"""What only the RayJob tests look at: the submitter Kubernetes Job(s) a RayJob owns, and their Pods."""
from __future__ import annotations

from kubernetes import client


def submitter_jobs(api: client.ApiClient, namespace: str, rayjob: str) -> list:
    """The Kubernetes Jobs owned by RayJob `rayjob` (through their ownerReference)."""
    return [j for j in client.BatchV1Api(api).list_namespaced_job(namespace).items
            if any(o.kind == "RayJob" and o.name == rayjob for o in j.metadata.owner_references or [])]


def submitter_pods(api: client.ApiClient, namespace: str, rayjob: str) -> list:
    """The Pods of the RayJob's submitter Job(s), oldest first."""
    core = client.CoreV1Api(api)
    out = []
    for j in submitter_jobs(api, namespace, rayjob):
        sel = ",".join(f"{k}={v}" for k, v in (j.spec.selector.match_labels or {}).items())
        out += core.list_namespaced_pod(namespace, label_selector=sel).items
    return sorted(out, key=lambda p: p.metadata.creation_timestamp)
