"""ListWatch: what was listed, then every event, resumed from the last version after a dropped connection; an
ERROR event or an expired version ends it with a reason."""
from __future__ import annotations

import threading
import time

from kubernetes import client

from rayconformance.kube.listwatch import ListWatch


def obj(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def lister(*args, **kwargs):
    return {"metadata": {"resourceVersion": "10"}, "items": [obj("a", "9")]}


class Streams:
    """One scripted watch request per call: a list of events, or an exception raised after them."""

    def __init__(self, *scripts):
        self.scripts, self.calls, self.done = list(scripts), [], threading.Event()

    def __call__(self, fn, *args, resource_version, timeout_seconds, **kwargs):
        self.calls.append((args, resource_version, kwargs))
        if not self.scripts:
            self.done.set()
            return
        events, exc = self.scripts.pop(0)
        yield from events
        if exc:
            raise exc


def settled(streams: Streams, lw: ListWatch) -> None:
    """Until every scripted request was made or the watch ended by itself."""
    deadline = time.monotonic() + 5
    while not streams.done.is_set() and lw.thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)


def run(streams: Streams, **kw) -> tuple[ListWatch, list]:
    seen = []
    lw = ListWatch(lambda kind, o: seen.append((kind, o["metadata"]["name"])), lister, "ns", stream=streams,
                   wait=lambda ev, s: None, label_selector="x=y", **kw)
    with lw:
        settled(streams, lw)
    return lw, seen


def test_lists_then_sees_every_event_resuming_after_a_dropped_connection():
    streams = Streams(([{"type": "ADDED", "object": obj("b", "11")}], ConnectionError("reset")),
                      ([{"type": "MODIFIED", "object": obj("b", "12")}], None))
    lw, seen = run(streams)
    assert seen == [("LISTED", "a"), ("ADDED", "b"), ("MODIFIED", "b")]
    assert [c[1] for c in streams.calls[:3]] == ["10", "11", "12"]
    assert streams.calls[0][0] == ("ns",) and streams.calls[0][2] == {"label_selector": "x=y"}
    assert lw.error is None


def test_listed_items_can_be_left_out():
    _, seen = run(Streams(([{"type": "ADDED", "object": obj("b", "11")}], None)), listed=False)
    assert seen == [("ADDED", "b")]


def test_an_error_event_ends_the_watch_with_its_reason():
    streams = Streams(([{"type": "ERROR", "object": {"code": 500, "metadata": {}}}], None))
    lw, seen = run(streams)
    lw.thread.join(5)
    assert seen == [("LISTED", "a")] and "ended with an error" in lw.error and len(streams.calls) == 1


def test_an_expired_version_ends_the_watch_instead_of_missing_events():
    lw, _ = run(Streams(([], RuntimeError("(410) Reason: Gone"))))
    lw.thread.join(5)
    assert "resource version expired" in lw.error


def test_typed_objects_are_handed_over_as_api_dicts():
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p", resource_version="11", uid="u1",
                                                    deletion_timestamp=None))
    seen = []
    streams = Streams(([{"type": "ADDED", "object": pod}], None))
    lw = ListWatch(lambda kind, o: seen.append(o), lambda *a, **k: client.V1PodList(
        metadata=client.V1ListMeta(resource_version="10"), items=[]), stream=streams, wait=lambda ev, s: None)
    with lw:
        settled(streams, lw)
    assert seen == [{"metadata": {"name": "p", "resourceVersion": "11", "uid": "u1"}}]


class Lists:
    """A list function answering the lists given, one per call (an exception is raised)."""

    def __init__(self, *lists):
        self.lists = list(lists)

    def __call__(self, *args, **kwargs):
        items = self.lists.pop(0)
        if isinstance(items, Exception):
            raise items
        return {"items": items, "metadata": {"resourceVersion": str(100 + len(self.lists))}}


def test_with_relist_an_expired_version_lists_again_and_reports_what_went():
    seen = []
    streams = Streams(([{"type": "ERROR", "object": {"code": 410, "message": "too old", "metadata": {}}}], None),
                      ([{"type": "ADDED", "object": obj("d", "7")}], None))
    lw = ListWatch(lambda kind, o: seen.append((kind, o["metadata"]["name"])),
                   Lists([obj("a", "1"), obj("b", "2")], RuntimeError("the CRD is being replaced"),
                         [obj("a", "5"), obj("c", "6")]),
                   relist=True, stream=streams, wait=lambda ev, s: None)
    with lw:
        settled(streams, lw)
    assert seen == [("LISTED", "a"), ("LISTED", "b"), ("DELETED", "b"), ("RELISTED", "a"), ("RELISTED", "c"),
                    ("ADDED", "d")]
    assert lw.error is None and lw.relists == 1 and streams.calls[1][1] == "100"


def test_relisting_gives_up_when_the_watch_is_stopped():
    lw = ListWatch(lambda kind, o: None, Lists([obj("a", "1")], RuntimeError("down")), relist=True,
                   stream=Streams(), wait=lambda ev, s: ev.set())
    lw._list("LISTED")
    assert lw._expired("410 Gone") is False and lw.relists == 0
