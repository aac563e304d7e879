"""The one step most RayCluster tests start with (create a RayCluster and wait until it is provisioned), and what
they watch: a cluster's Pods, its conditions, several lists at once (all on `fixtures.listwatch`)."""
from __future__ import annotations

import threading
import time

from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.listwatch import ListWatch, Watching
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned


def create_provisioned(api: client.ApiClient, namespace: str, body: dict, timeout: float
                       ) -> tuple[ray.RayResources, dict]:
    """Create the RayCluster and wait for RayClusterProvisioned=True; returns its resources and the object."""
    __tracebackhide__ = True
    rc = ray.RayResources(api, namespace, "RayCluster")
    rc.create(body)
    return rc, raycluster_must_be_provisioned(api, namespace, body["metadata"]["name"], timeout)


class PodWatch(Watching):
    """Every change to one RayCluster's Pods of one node type (and, given `group`, of that worker group only), seen
    through the watch API from the moment it is started (start it before creating the RayCluster to see every Pod
    ever created). Use as a context manager.

    `created` lists the Pods (by UID) ever seen, `deleted` those seen going away (deletionTimestamp set or
    removed), `peak` the largest number of live Pods (existing, not being deleted) seen at any one time and
    `peak_pods` which ones they were."""

    def __init__(self, api: client.ApiClient, namespace: str, cluster: str, node_type: str = "worker",
                 group: str | None = None):
        self.selector = f"ray.io/cluster={cluster},ray.io/node-type={node_type}" + (f",ray.io/group={group}"
                                                                                    if group else "")
        self.lock = threading.Lock()
        self.live: dict[str, str] = {}  # uid -> name
        self.names: dict[str, str] = {}  # uid -> name, every Pod seen
        self.created: list[str] = []  # uids, in order of first sight
        self.deleted: list[str] = []  # uids, in order of deletion
        self.peak, self.peak_pods = 0, []
        self.watch = ListWatch(self._see, client.CoreV1Api(api).list_namespaced_pod, namespace,
                               label_selector=self.selector)

    def _see(self, kind: str, pod: dict) -> None:
        uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
        with self.lock:
            if uid not in self.names:
                self.names[uid] = name
                self.created.append(uid)
            if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                self.live.pop(uid, None)
                if uid not in self.deleted:
                    self.deleted.append(uid)
            else:
                self.live[uid] = name
            if len(self.live) > self.peak:
                self.peak, self.peak_pods = len(self.live), sorted(self.live.values())

    def live_names(self) -> list[str]:
        with self.lock:
            return sorted(self.live.values())

    def summary(self) -> str:
        with self.lock:
            return (f"{len(self.created)} Pods created ({', '.join(self.names[u] for u in self.created) or 'none'}), "
                    f"{len(self.deleted)} deleted, live now: {sorted(self.live.values()) or 'none'}, "
                    f"at most {self.peak} live at once ({', '.join(self.peak_pods)})")

    def must_not_have_failed(self) -> None:
        __tracebackhide__ = True
        assert self.error is None, f"could not watch the Pods ({self.selector}): {self.error}"


class ConditionWatch(Watching):
    """Every version of one RayCluster's status conditions, seen through the watch API from the moment it is
    started (what existed before is not a version). Use as a context manager; `versions` lists
    `{type: (status, reason)}` in the order observed."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str):
        self.versions: list[dict[str, tuple[str, str]]] = []
        self.watch = ListWatch(self._see, client.CustomObjectsApi(api).list_namespaced_custom_object, ray.GROUP,
                               ray.VERSION, namespace, "rayclusters", field_selector=f"metadata.name={name}",
                               listed=False)

    def _see(self, kind: str, obj: dict) -> None:
        conds = (obj.get("status") or {}).get("conditions") or []
        self.versions.append({c["type"]: (c["status"], c.get("reason") or "") for c in conds})

    def seen(self, ctype: str) -> list[tuple[str, str]]:
        """`(status, reason)` of `ctype` in each observed version, `("absent", "")` where it was missing."""
        return [v.get(ctype, ("absent", "")) for v in self.versions]


class ReplicasWatch(Watching):
    """Every version of one RayCluster's worker group `replicas` (spec.workerGroupSpecs[].replicas, what the
    autoscaler patches), seen through the watch API from the moment it is started, the current version first.
    Use as a context manager; `values(group)` lists that group's replicas in the order observed, a value repeated
    in consecutive versions once."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str):
        self.lock = threading.Lock()
        self.versions: list[dict[str, int]] = []
        self.watch = ListWatch(self._see, client.CustomObjectsApi(api).list_namespaced_custom_object, ray.GROUP,
                               ray.VERSION, namespace, "rayclusters", field_selector=f"metadata.name={name}")

    def _see(self, kind: str, obj: dict) -> None:
        groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
        with self.lock:
            self.versions.append({g.get("groupName"): g.get("replicas", 0) for g in groups})

    def values(self, group: str) -> list[int]:
        with self.lock:
            seen = [v[group] for v in self.versions if group in v]
        return [x for i, x in enumerate(seen) if i == 0 or x != seen[i - 1]]


class WatchLog:
    """Watch events of several lists at once, each entry `(monotonic time, label, event type, object as a dict)`,
    in the order they arrived. `add(label, list_function, *args, **kwargs)` before entering; use as a context
    manager. The order of events of different lists is the order this process saw them in."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries: list[tuple[float, str, str, dict]] = []
        self.watches: list[tuple[str, ListWatch]] = []

    def add(self, label: str, fn, *args, **kwargs) -> "WatchLog":
        def see(kind: str, obj: dict) -> None:
            with self.lock:
                self.entries.append((time.monotonic(), label, kind, obj))

        self.watches.append((label, ListWatch(see, fn, *args, listed=False, **kwargs)))
        return self

    def __enter__(self) -> "WatchLog":
        for _, w in self.watches:
            w.start()
        return self

    def __exit__(self, *exc) -> None:
        for _, w in self.watches:
            w.stop()

    @property
    def errors(self) -> list[str]:
        return [f"{label}: {w.error}" for label, w in self.watches if w.error]

    def first(self, label: str, pred) -> tuple[float, str, str, dict] | None:
        """The first entry of `label` whose (event type, object) satisfies `pred`."""
        with self.lock:
            return next((e for e in self.entries if e[1] == label and pred(e[2], e[3])), None)

    def timeline(self, describe) -> str:
        """One line per entry, `+seconds label TYPE <describe(object)>`."""
        with self.lock:
            t0 = self.entries[0][0] if self.entries else 0
            return "; ".join(f"+{t - t0:.1f}s {label} {typ} {describe(label, obj)}"
                             for t, label, typ, obj in self.entries)
