"""What the RayService tests observe: conditions, active/pending clusters, and answers through the serve Service."""
from __future__ import annotations

from fixtures import ray


def serve_service(obj: dict) -> str:
    custom = ((obj.get("spec") or {}).get("serveService") or {}).get("metadata", {}).get("name")
    return custom or f"{obj['metadata']['name']}-serve-svc"


def status(obj: dict | None) -> dict:
    return (obj or {}).get("status") or {}


def active_cluster(obj: dict | None) -> str | None:
    return (status(obj).get("activeServiceStatus") or {}).get("rayClusterName")


def pending_cluster(obj: dict | None) -> str | None:
    return (status(obj).get("pendingServiceStatus") or {}).get("rayClusterName")


def describe(obj: dict | None) -> str:
    s = status(obj)
    return (f"{ray.describe_conditions(obj)}; numServeEndpoints={s.get('numServeEndpoints')}; "
            f"active={active_cluster(obj)}; pending={pending_cluster(obj)}")


def is_ready(obj: dict | None) -> bool:
    c = ray.condition(obj, "Ready")
    return c is not None and c["status"] == "True"


def answer(api, namespace: str, obj: dict) -> tuple[int, str]:
    """One request to the Serve application through the serve Service (apiserver services proxy)."""
    return ray.proxy_get(api, namespace, serve_service(obj), "serve", "/")
