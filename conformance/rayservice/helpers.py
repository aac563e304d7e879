"""What the RayService tests observe: conditions, active/pending clusters, and answers through the serve Service."""
from __future__ import annotations

from fixtures import ray
from fixtures.waiting import wait_for


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


def deploy(k8s, namespace: str, ray_version: str, timeouts, docs: list[dict] | None = None
           ) -> tuple[ray.RayResources, dict]:
    """Create the RayService (default: samples/rayservice-greeter.yaml) and wait until it is Ready=True and
    serves from an active RayCluster with no pending one (a first cluster starts out as the pending one)."""
    docs = docs if docs is not None else ray.load_sample("rayservice-greeter", ray_version)
    ray.create_objects(k8s, namespace, docs)
    rs = ray.RayResources(k8s, namespace, "RayService")
    name = next(d for d in docs if d["kind"] == "RayService")["metadata"]["name"]
    obj = wait_for(lambda: (is_ready(o := rs.get(name)) and bool(active_cluster(o)) and not pending_cluster(o), o),
                   timeouts.long, f"RayService {name} Ready=True, with an active and no pending RayCluster",
                   observe=lambda: describe(rs.get(name)))
    return rs, obj
