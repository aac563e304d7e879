"""The one step most RayCluster tests start with: create a RayCluster and wait until it is provisioned."""
from __future__ import annotations

from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned


def create_provisioned(api: client.ApiClient, namespace: str, body: dict, timeout: float
                       ) -> tuple[ray.RayResources, dict]:
    """Create the RayCluster and wait for RayClusterProvisioned=True; returns its resources and the object."""
    __tracebackhide__ = True
    rc = ray.RayResources(api, namespace, "RayCluster")
    rc.create(body)
    return rc, raycluster_must_be_provisioned(api, namespace, body["metadata"]["name"], timeout)


class PodWatch:
    """Every change to one RayCluster's Pods of one node type, seen through the watch API from the moment it is
    started (start it before creating the RayCluster to see every Pod ever created). Use as a context manager.

    `created` lists the Pods (by UID) ever seen, `deleted` those seen going away (deletionTimestamp set or
    removed), `peak` the largest number of live Pods (existing, not being deleted) seen at any one time and
    `peak_pods` which ones they were."""

    def __init__(self, api: client.ApiClient, namespace: str, cluster: str, node_type: str = "worker"):
        import threading

        self.core = client.CoreV1Api(api)
        self.ns, self.selector = namespace, f"ray.io/cluster={cluster},ray.io/node-type={node_type}"
        self.lock = threading.Lock()
        self.live: dict[str, str] = {}  # uid -> name
        self.names: dict[str, str] = {}  # uid -> name, every Pod seen
        self.created: list[str] = []  # uids, in order of first sight
        self.deleted: list[str] = []  # uids, in order of deletion
        self.peak, self.peak_pods = 0, []
        self.error: str | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PodWatch":
        pods = self.core.list_namespaced_pod(self.ns, label_selector=self.selector)
        for p in pods.items:
            self._see("ADDED", p)
        self.rv = pods.metadata.resource_version
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)

    def _see(self, kind: str, pod) -> None:
        uid, name = pod.metadata.uid, pod.metadata.name
        with self.lock:
            if uid not in self.names:
                self.names[uid] = name
                self.created.append(uid)
            if kind == "DELETED" or pod.metadata.deletion_timestamp:
                if uid in self.live or uid not in self.deleted:
                    self.live.pop(uid, None)
                    if uid not in self.deleted:
                        self.deleted.append(uid)
            else:
                self.live[uid] = name
            if len(self.live) > self.peak:
                self.peak, self.peak_pods = len(self.live), sorted(self.live.values())

    def _run(self) -> None:
        from kubernetes import watch

        while not self.stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(self.core.list_namespaced_pod, self.ns, label_selector=self.selector,
                                   resource_version=self.rv, timeout_seconds=5, allow_watch_bookmarks=False):
                    obj = ev["object"]
                    if ev["type"] == "ERROR":
                        self.error = f"the watch ended with an error: {obj}"
                        return
                    self.rv = obj.metadata.resource_version
                    self._see(ev["type"], obj)
                    if self.stop.is_set():
                        break
            except Exception as e:  # noqa: BLE001 - a dropped connection: watch again from the last version
                if "410" in str(e) or "Gone" in str(e):
                    self.error = f"the watch lost events (resource version expired): {e}"
                    return
                self.stop.wait(0.5)
            finally:
                w.stop()

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


class ConditionWatch:
    """Every version of one RayCluster's status conditions, seen through the watch API from the moment it is
    started. Use as a context manager; `versions` lists `{type: (status, reason)}` in the order observed."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str):
        import threading

        self.co = client.CustomObjectsApi(api)
        self.ns, self.name = namespace, name
        self.versions: list[dict[str, tuple[str, str]]] = []
        self.error: str | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "ConditionWatch":
        self.rv = self.co.list_namespaced_custom_object(ray.GROUP, ray.VERSION, self.ns, "rayclusters",
                                                        field_selector=f"metadata.name={self.name}"
                                                        )["metadata"]["resourceVersion"]
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        from kubernetes import watch

        while not self.stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(self.co.list_namespaced_custom_object, ray.GROUP, ray.VERSION, self.ns,
                                   "rayclusters", field_selector=f"metadata.name={self.name}",
                                   resource_version=self.rv, timeout_seconds=5):
                    obj = ev["object"]
                    if ev["type"] == "ERROR":
                        self.error = f"the watch ended with an error: {obj}"
                        return
                    self.rv = obj["metadata"]["resourceVersion"]
                    conds = (obj.get("status") or {}).get("conditions") or []
                    self.versions.append({c["type"]: (c["status"], c.get("reason") or "") for c in conds})
                    if self.stop.is_set():
                        break
            except Exception as e:  # noqa: BLE001 - a dropped connection: watch again from the last version
                if "410" in str(e) or "Gone" in str(e):
                    self.error = f"the watch lost events (resource version expired): {e}"
                    return
                self.stop.wait(0.5)
            finally:
                w.stop()

    def seen(self, ctype: str) -> list[tuple[str, str]]:
        """`(status, reason)` of `ctype` in each observed version, `("absent", "")` where it was missing."""
        return [v.get(ctype, ("absent", "")) for v in self.versions]


class WatchLog:
    """Watch events of several lists at once, each entry `(monotonic time, label, event type, object as a dict)`,
    in the order they arrived. `add(label, list_function, *args, **kwargs)` before entering; use as a context
    manager. The order of events of different lists is the order this process saw them in."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.entries: list[tuple[float, str, str, dict]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.streams: list[tuple[str, object, tuple, dict]] = []
        self.threads: list = []

    def add(self, label: str, fn, *args, **kwargs) -> "WatchLog":
        self.streams.append((label, fn, args, kwargs))
        return self

    def __enter__(self) -> "WatchLog":
        import threading

        for label, fn, args, kwargs in self.streams:
            listed = fn(*args, **kwargs)
            rv = listed["metadata"]["resourceVersion"] if isinstance(listed, dict) else listed.metadata.resource_version
            t = threading.Thread(target=self._run, args=(label, fn, args, kwargs, rv), daemon=True)
            self.threads.append(t)
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)

    def _run(self, label, fn, args, kwargs, rv) -> None:
        import time

        from kubernetes import watch

        api = client.ApiClient()
        while not self.stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(fn, *args, resource_version=rv, timeout_seconds=5, **kwargs):
                    obj = ev["object"]
                    obj = obj if isinstance(obj, dict) else api.sanitize_for_serialization(obj)
                    if ev["type"] == "ERROR":
                        self.errors.append(f"{label}: the watch ended with an error: {obj}")
                        return
                    rv = obj["metadata"]["resourceVersion"]
                    with self.lock:
                        self.entries.append((time.monotonic(), label, ev["type"], obj))
                    if self.stop.is_set():
                        break
            except Exception as e:  # noqa: BLE001 - a dropped connection: watch again from the last version
                if "410" in str(e) or "Gone" in str(e):
                    self.errors.append(f"{label}: the watch lost events (resource version expired): {e}")
                    return
                self.stop.wait(0.5)
            finally:
                w.stop()

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
