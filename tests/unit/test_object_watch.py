"""The RayService tests' ObjectWatch (conformance/rayservice/helpers.py): when a watch cannot go on from its last
version (HTTP 410, e.g. after the operator upgrade replaced the CRDs), it is an error, or with `relist` what
exists is listed again: objects gone since count as DELETED."""
from __future__ import annotations

from conformance.rayservice.helpers import ObjectWatch


def cluster(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}}


class FakeObjects:
    """list_namespaced_custom_object answering the lists given, one per call."""

    def __init__(self, *lists: list[dict]):
        self.lists = list(lists)

    def list_namespaced_custom_object(self, *args, **kwargs) -> dict:
        items = self.lists.pop(0)
        if isinstance(items, Exception):
            raise items
        return {"items": items, "metadata": {"resourceVersion": str(100 + len(self.lists))}}


def watch(relist: bool, *lists) -> ObjectWatch:
    w = ObjectWatch(None, "ns", "rayclusters", relist=relist)
    w.co = FakeObjects(*lists)
    w.start = w.clock()
    w._list("LISTED")
    return w


def test_a_lost_watch_is_an_error_without_relist():
    w = watch(False, [cluster("a", "1")])
    assert w._gone("410 Gone") is False
    assert "lost events" in w.error and [v.type for v in w.snapshot()] == ["LISTED"]


def test_relist_records_what_exists_and_what_went():
    w = watch(True, [cluster("a", "1"), cluster("b", "2")], RuntimeError("the CRD is being replaced"),
              [cluster("a", "5"), cluster("c", "6")])
    assert w._gone("410 Gone") is True
    assert w.error is None and w.relists == 1 and w.rv == "100"
    assert [(v.type, v.obj["metadata"]["name"]) for v in w.snapshot()] == [
        ("LISTED", "a"), ("LISTED", "b"), ("DELETED", "b"), ("RELISTED", "a"), ("RELISTED", "c")]
    assert w.first(lambda v: v.obj["metadata"]["name"] == "c", 0).type == "RELISTED"


def test_relist_gives_up_when_the_watch_is_stopped():
    w = watch(True, [cluster("a", "1")], RuntimeError("down"))
    w.stop.set()
    assert w._gone("410 Gone") is False
