"""What the RayService tests observe and do: conditions, active/pending clusters, answers through the serve Service,
upgrades and the load generator's traffic during them."""
from __future__ import annotations

from rayconformance.fixtures import ray
from rayconformance.fixtures.traffic import LoadGenerator, answered, summary
from rayconformance.fixtures.waiting import wait_for


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


def start_traffic(k8s, namespace, obj, timeouts, url: str | None = None) -> LoadGenerator:
    """Start 20 requests/s at `url` (default: the serve Service) and wait for the first 20 answers."""
    gen = LoadGenerator(k8s, namespace, url or f"http://{serve_service(obj)}:8000/", rate=20)
    gen.start()
    wait_for(lambda: (answered(s := gen.stats()) >= 20, s), timeouts.medium,
             f"the load generator to get 20 answers from {gen.url}", observe=gen.stats)
    return gen


def trigger_upgrade(rs: ray.RayResources, obj: dict, marker: str) -> None:
    """Change the cluster spec (a head env var), which needs a new RayCluster."""
    spec = obj["spec"]["rayClusterConfig"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [*head.get("env", []), {"name": "RAYCONFORMANCE_UPGRADE", "value": marker}]
    rs.patch(obj["metadata"]["name"], {"spec": {"rayClusterConfig": spec, "rayClusterDeletionDelaySeconds": 5}})


def elapsed(gen: LoadGenerator) -> float | None:
    """The load generator's clock (seconds since it started), to place events among its failures."""
    return (gen.stats() or {}).get("elapsed")


def wait_switched(k8s, namespace, rs, name, old_cluster, gen, timeouts, measure=None) -> str:
    def switched():
        o = rs.get(name)
        new = active_cluster(o)
        return (new not in (None, old_cluster) and not pending_cluster(o)), new

    new = wait_for(switched, timeouts.long, f"traffic to switch from {old_cluster} to a new RayCluster",
                   observe=lambda: f"{describe(rs.get(name))}; traffic: {summary(gen.stats())}")
    if measure:
        measure("upgrade.switched_at_s", elapsed(gen))
    clusters = ray.RayResources(k8s, namespace, "RayCluster")
    wait_for(lambda: (clusters.get(old_cluster) is None, True), timeouts.medium,
             f"the old RayCluster {old_cluster} to be deleted",
             observe=lambda: [c["metadata"]["name"] for c in clusters.list()])
    if measure:
        measure("upgrade.old_cluster_deleted_at_s", elapsed(gen))
    wait_for(lambda: ((s := gen.stats()) is not None and any(new in a for a in s["answers"]), s), timeouts.medium,
             f"answers from the new cluster {new}", observe=gen.stats)
    return new


def final_stats(gen: LoadGenerator, measure) -> dict:
    """Stop the load generator; record and return its final statistics."""
    stats = gen.stop()
    record_traffic(measure, stats)
    assert stats and stats["requests"] > 0, f"the load generator reported no requests: {summary(stats)}"
    return stats


def record_traffic(measure, stats: dict | None) -> None:
    for k in ("requests", "failures", "retries", "warmup_failures", "warmup_errors", "p50_ms", "p95_ms", "p99_ms", "max_ms",
              "first_failure_s", "last_failure_s", "failure_log"):
        measure(f"traffic.{k}", (stats or {}).get(k))
