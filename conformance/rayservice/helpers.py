"""What only the RayService tests do: deploy the greeter RayService, trigger an upgrade, and run the load
generator through it (its clock, the upgrade's steps on that clock, its final statistics)."""
from __future__ import annotations

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayservice import rayservice_must_be_ready, rayservice_must_switch
from rayconformance.fixtures.expect.traffic import answers_must_come_from, load_generator_must_get_answers
from rayconformance.fixtures.traffic import LoadGenerator, summary


def deploy(k8s, namespace: str, ray_version: str, timeouts, docs: list[dict] | None = None
           ) -> tuple[ray.RayResources, dict]:
    """Create the RayService (default: samples/rayservice-greeter.yaml) and wait until it is Ready=True and
    serves from an active RayCluster with no pending one (a first cluster starts out as the pending one)."""
    __tracebackhide__ = True
    docs = docs if docs is not None else ray.load_sample("rayservice-greeter", ray_version)
    ray.create_objects(k8s, namespace, docs)
    name = next(d for d in docs if d["kind"] == "RayService")["metadata"]["name"]
    return ray.RayResources(k8s, namespace, "RayService"), rayservice_must_be_ready(k8s, namespace, name,
                                                                                    timeouts.long)


def start_traffic(k8s, namespace, obj, timeouts, url: str | None = None) -> LoadGenerator:
    """Start 20 requests/s at `url` (default: the serve Service) and wait for the first 20 answers."""
    __tracebackhide__ = True
    gen = LoadGenerator(k8s, namespace, url or f"http://{ray.serve_service(obj)}:8000/", rate=20)
    gen.start()
    load_generator_must_get_answers(gen, 20, timeouts.medium)
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


def wait_switched(k8s, namespace, name, old_cluster, gen, timeouts, measure=None) -> str:
    """The upgrade completes: traffic switches to a new RayCluster, the old one is deleted, and the load generator
    gets answers from the new one. Records when each happened on the generator's clock; returns the new cluster."""
    __tracebackhide__ = True
    new = rayservice_must_switch(k8s, namespace, name, old_cluster, timeouts.long,
                                 also=lambda: f"traffic: {summary(gen.stats())}")
    if measure:
        measure("upgrade.switched_at_s", elapsed(gen))
    raycluster_must_be_gone(k8s, namespace, old_cluster, timeouts.medium, after="the upgrade")
    if measure:
        measure("upgrade.old_cluster_deleted_at_s", elapsed(gen))
    answers_must_come_from(gen, new, timeouts.medium)
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
