"""The Pod source of one Node: list and watch the Pods bound to it and hand every change to the agent.

After each (re)list the agent learns which Pods are still bound, so Pods deleted while nobody watched are cleaned
up; an expired resourceVersion (410) relists, a dropped connection retries after a second.
"""
from __future__ import annotations

import logging
import threading
import time

from .kube import ApiError

log = logging.getLogger("nodeagent.pods")


class PodWatch(threading.Thread):
    def __init__(self, agent, node):
        super().__init__(daemon=True, name=f"watch-{node.name}")
        self.agent, self.node = agent, node
        self.synced = threading.Event()

    def run(self) -> None:
        path = "/api/v1/pods"
        q = {"fieldSelector": f"spec.nodeName={self.node.name}"}
        rv = None
        while not self.agent.stopping.is_set():
            try:
                if rv is None:
                    lst = self.agent.kube.get(path, q)
                    rv = lst["metadata"]["resourceVersion"]
                    seen = set()
                    for pod in lst.get("items", []):
                        seen.add(pod["metadata"]["uid"])
                        self.agent.dispatch(self.node, "ADDED", pod)
                    self.agent.resync_node(self.node, seen)
                    self.synced.set()
                for ev in self.agent.kube.watch(path, q, rv):
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            rv = None
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if typ in ("ADDED", "MODIFIED", "DELETED"):
                        self.agent.dispatch(self.node, typ, obj)
            except ApiError as e:
                if e.status == 410:
                    rv = None
                else:
                    log.warning("watch %s: %s", self.node.name, e)
                    time.sleep(1)
            except Exception as e:  # noqa: BLE001 - connection drops: retry
                if not self.agent.stopping.is_set():
                    log.warning("watch %s: %s", self.node.name, e)
                    time.sleep(1)
