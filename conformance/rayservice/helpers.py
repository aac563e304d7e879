"""What only the RayService tests do: deploy the greeter RayService, trigger an upgrade, and run the load
generator through it (its clock, the upgrade's steps on that clock, its final statistics)."""
from __future__ import annotations

import threading
import time

from rayconformance.fixtures import ray
from rayconformance.fixtures.listwatch import ListWatch, Watching
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


def trigger_upgrade(rs: ray.RayResources, obj: dict, marker: str, deletion_delay: int = 5,
                    env: dict[str, str] | None = None) -> dict:
    """Change the cluster spec (a head env var, plus `env`), which needs a new RayCluster; the old one is to be
    deleted `deletion_delay` seconds after the switch (rayClusterDeletionDelaySeconds). Returns the patched
    RayService."""
    spec = obj["spec"]["rayClusterConfig"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [*head.get("env", []), {"name": "RAYCONFORMANCE_UPGRADE", "value": marker},
                   *({"name": k, "value": v} for k, v in (env or {}).items())]
    return rs.patch(obj["metadata"]["name"],
                    {"spec": {"rayClusterConfig": spec, "rayClusterDeletionDelaySeconds": deletion_delay}})


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
              "first_failure_s", "last_failure_s", "failure_log", "slow_log"):
        measure(f"traffic.{k}", (stats or {}).get(k))


class Version:
    """One version of a watched object: when it was seen (seconds since the watch started), the event type
    (LISTED for what existed when the watch started, then ADDED, MODIFIED, DELETED) and the object; `at` is the
    same moment on time.monotonic's clock, to compare versions seen by different watches."""
    __slots__ = ("t", "at", "type", "obj")

    def __init__(self, t: float, at: float, type_: str, obj: dict):
        self.t, self.at, self.type, self.obj = t, at, type_, obj


class ObjectWatch(Watching):
    """Every version of the ray.io objects of one kind (`plural`) in a namespace (or of the one named `name`),
    seen through the watch API from the moment it is started. Use as a context manager.

    `first(holds, within)` waits for a version for which `holds(version)` is true (seen already, or arriving
    within `within` seconds from now or from `since_at`) and returns it, or None when the window ends
    without one: how a test watches a fixed window for something that must not happen.

    A watch that can no longer go on from its last version (HTTP 410, e.g. after the CRD was replaced) is an
    error, unless `relist`: then what exists is listed again (versions of type RELISTED, an object gone since
    as DELETED) and the watch goes on from there."""

    def __init__(self, api, namespace: str, plural: str, name: str | None = None, relist: bool = False):
        from kubernetes import client

        self.ns, self.plural = namespace, plural
        self.versions: list[Version] = []
        self.changed = threading.Condition()
        self.clock = time.monotonic
        selector = {"field_selector": f"metadata.name={name}"} if name else {}
        self.watch = ListWatch(self._see, client.CustomObjectsApi(api).list_namespaced_custom_object, ray.GROUP,
                               ray.VERSION, namespace, plural, relist=relist, **selector)

    def __enter__(self) -> "ObjectWatch":
        self.start = self.clock()
        return super().__enter__()

    @property
    def relists(self) -> int:
        return self.watch.relists

    def now(self) -> float:
        return self.clock() - self.start

    def _see(self, kind: str, obj: dict) -> None:
        with self.changed:
            at = self.clock()
            self.versions.append(Version(at - self.start, at, kind, obj))
            self.changed.notify_all()

    def snapshot(self) -> list[Version]:
        with self.changed:
            return list(self.versions)

    def first(self, holds, within: float, since_at: float | None = None) -> Version | None:
        """The first version for which `holds(version)` is true, waiting until `within` seconds after `since_at`
        (a time.monotonic() moment, e.g. another version's `at`; default: now) at most; None if there is none by
        then."""
        deadline = (self.clock() if since_at is None else since_at) + within - self.start
        seen = 0
        with self.changed:
            while True:
                for v in self.versions[seen:]:
                    if holds(v):
                        return v
                seen = len(self.versions)
                left = deadline - self.now()
                if left <= 0 or self.error:
                    return None
                self.changed.wait(min(left, 1.0))

    def must_not_have_failed(self) -> None:
        __tracebackhide__ = True
        assert self.error is None, f"could not watch the {self.plural} in {self.ns}: {self.error}"


def rayservice_state(obj: dict) -> str:
    """One line for one observed RayService version: its clusters, conditions and serviceStatus."""
    from rayconformance.fixtures.expect.rayservice import describe_rayservice

    return f"{describe_rayservice(obj)}; serviceStatus={ray.status(obj).get('serviceStatus')!r}"


def distinct_states(versions: list[Version]) -> list[str]:
    """The observed RayService states in order, consecutive repeats folded (`... (x3)`)."""
    out: list[list] = []
    for v in versions:
        s = rayservice_state(v.obj)
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return [s + (f" (x{n})" if n > 1 else "") for s, n in out]


def _states_seen(watch: ObjectWatch) -> str:
    return "; observed, in order:\n  " + "\n  ".join(distinct_states(watch.snapshot()))


def rayservice_must_serve_again_from(watch: ObjectWatch, api, namespace: str, name: str, cluster: str, app: str,
                                     timeout: float, *, after: str) -> dict:
    """After `after` (e.g. losing the head), the RayService `name` serves again from the same RayCluster
    `cluster`: Ready=True, application `app` RUNNING in its status, no pending RayCluster. Fails at once when the
    `watch` on it sees another active or a pending RayCluster. Returns the RayService."""
    __tracebackhide__ = True
    from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, application_status,
                                                           describe_rayservice, is_ready)
    from rayconformance.fixtures.waiting import wait_until

    rs = ray.RayResources(api, namespace, "RayService")

    def moved() -> Version | None:
        return watch.first(lambda v: active_and_pending_clusters(v.obj) != (cluster, None), 0)

    def serving(obj: dict | None) -> bool:
        return (active_and_pending_clusters(obj) == (cluster, None) and is_ready(obj)
                and application_status(obj, app) == "RUNNING")

    seen, obj = wait_until(lambda: (moved(), rs.get(name)), lambda s: s[0] is not None or serving(s[1]),
                           f"RayService {name} to serve again from RayCluster {cluster} after {after} (Ready=True, "
                           f"application {app} RUNNING, no pending RayCluster)", timeout,
                           render=lambda s: f"{describe_rayservice(s[1])}; application {app}: "
                                            f"{application_status(s[1], app)}")
    watch.must_not_have_failed()
    assert seen is None, (f"after {after}, RayService {name} must stay on RayCluster {cluster} with no pending "
                          f"one; observed at {seen and seen.t:.1f}s active/pending "
                          f"{active_and_pending_clusters(seen and seen.obj)}{_states_seen(watch)}")
    return obj


def rayservice_must_have_stayed_ready(watch: ObjectWatch, name: str, *, through: str) -> None:
    """Every version of the RayService `name` the `watch` saw had Ready=True: it never reported itself not ready
    `through` what happened."""
    __tracebackhide__ = True
    from rayconformance.fixtures.expect.rayservice import is_ready

    watch.must_not_have_failed()
    dropped = watch.first(lambda v: not is_ready(v.obj), 0)
    assert dropped is None, (f"RayService {name} must stay Ready=True through {through}; observed at "
                             f"{dropped and dropped.t:.1f}s: {dropped and rayservice_state(dropped.obj)}"
                             f"{_states_seen(watch)}")


def no_raycluster_must_be_created(watch: ObjectWatch, *, through: str) -> None:
    """The `watch` on the namespace's RayClusters saw none created (only those listed when it started)."""
    __tracebackhide__ = True
    watch.must_not_have_failed()
    listed = sorted({v.obj["metadata"]["name"] for v in watch.snapshot() if v.type == "LISTED"})
    created = watch.first(lambda v: v.type == "ADDED", 0)
    assert created is None, (f"no RayCluster may be created through {through} (there were {listed}); observed "
                             f"RayCluster {created and created.obj['metadata']['name']} created at "
                             f"{created and created.t:.1f}s")
