"""The event recorder: what the node agent tells users about a Pod, posted the way a kubelet's recorder does.

A repeat of an event (same Pod, type, reason, message and field path) within `FOLD_SECONDS` of the last one is
folded into the Event already posted: its `count` grows and its `lastTimestamp` moves (client-go's correlator), so
`kubectl describe pod` shows "x5 over 40s" instead of five lines, and a probe failing again and again stays
visible. Posting is best effort, from one thread, through a bounded queue.

    recorder = EventRecorder(kube)
    threading.Thread(target=recorder.run, daemon=True).start()
    recorder.record(pod, node, "Warning", "Unhealthy", "Readiness probe failed: ...", "spec.containers{ray-head}")
"""
from __future__ import annotations

import datetime as dt
import logging
import queue
import time
from typing import Callable

from .kube import MERGE

log = logging.getLogger("nodeagent")
FOLD_SECONDS = 600.0  # client-go folds repeats seen within its 10-minute window
MAX_REMEMBERED = 5000


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class EventRecorder:
    def __init__(self, kube, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], dt.datetime] = _utcnow):
        self.kube, self.clock, self.now = kube, clock, now
        self.queue: queue.Queue = queue.Queue(maxsize=2000)
        self.posted: dict[tuple, dict] = {}  # event key -> {"name", "count", "at"} of the Event posted for it

    def record(self, pod: dict, node: str, etype: str, reason: str, message: str, fieldpath: str | None) -> None:
        """Queue an event about `pod`; dropped when the queue is full (events are best effort)."""
        try:
            self.queue.put_nowait((pod, node, etype, reason, message, fieldpath))
        except queue.Full:
            pass

    def run(self) -> None:
        while True:
            self.post(*self.queue.get())

    def post(self, pod: dict, node: str, etype: str, reason: str, message: str, fieldpath: str | None) -> None:
        md = pod["metadata"]
        key = (md["uid"], etype, reason, message, fieldpath)
        stamp = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        seen = self.posted.get(key)
        if seen and self.clock() - seen["at"] < FOLD_SECONDS:
            try:
                self.kube.patch(f"/api/v1/namespaces/{md['namespace']}/events/{seen['name']}",
                                {"count": seen["count"] + 1, "lastTimestamp": stamp}, content_type=MERGE)
                seen["count"] += 1
                seen["at"] = self.clock()
                return
            except Exception as e:  # noqa: BLE001 - e.g. the Event expired meanwhile: post a new one
                log.debug("event %s not folded: %s", reason, e)
        name = f"{md['name']}.{time.time_ns():x}"
        obj = {"namespace": md["namespace"], "name": md["name"], "uid": md["uid"], "kind": "Pod", "apiVersion": "v1"}
        if fieldpath:
            obj["fieldPath"] = fieldpath
        body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": md["namespace"]},
                "involvedObject": obj, "reason": reason, "message": message, "type": etype,
                "source": {"component": "kubelet", "host": node}, "count": 1,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "reportingComponent": "kubelet", "reportingInstance": node}
        try:
            self.kube.create(f"/api/v1/namespaces/{md['namespace']}/events", body)
        except Exception as e:  # noqa: BLE001 - events are best effort
            log.debug("event %s not posted: %s", reason, e)
            return
        if len(self.posted) >= MAX_REMEMBERED:
            self.posted.clear()
        self.posted[key] = {"name": name, "count": 1, "at": self.clock()}
