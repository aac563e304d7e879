"""Events read alike whichever API the operator writes them through (core/v1 count, events.k8s.io/v1 series)."""
from __future__ import annotations

from rayconformance.testing import events


def v1(reason: str, *, series: int | None = None, deprecated: int | None = None) -> dict:
    """An events.k8s.io/v1 Event as the API returns it (the fields read; one written through core/v1 has no
    eventTime and no series)."""
    return {"reason": reason, "type": "Normal", "note": "n", "regarding": {"kind": "RayCluster", "name": "c"},
            "metadata": {"name": reason}, **({"deprecatedCount": deprecated} if deprecated else {}),
            **({"series": {"count": series}} if series else {})}


def test_repeats_count_from_series_then_the_deprecated_count_then_one():
    assert events.of(v1("CreatedWorkerPod", series=3)).count == 3  # events.k8s.io/v1 recorder (KubeRay 1.7)
    assert events.of(v1("CreatedWorkerPod", deprecated=4)).count == 4  # core/v1 recorder (KubeRay <= 1.6)
    assert events.of(v1("CreatedWorkerPod")).count == 1
    e = events.of(v1("DeletedWorkerPod", series=2))
    assert (e.kind, e.name, e.reason, e.message) == ("RayCluster", "c", "DeletedWorkerPod", "n")
    assert str(e) == "Normal DeletedWorkerPod on RayCluster c x2: n"


def test_an_event_written_through_events_k8s_io_is_lazy():
    assert events.of({"reason": "R", "eventTime": "2026-12-02T16:00:00.000000Z", "series": {"count": 2}}).lazy
    assert not events.of({"reason": "R", "deprecatedCount": 6}).lazy


def test_a_lazy_series_counts_at_least_once_and_never_above(monkeypatch):
    import pytest

    from rayconformance.testing.expect import raycluster

    def seen(*counts, lazy=True):
        monkeypatch.setattr(raycluster, "events", lambda api, ns: [
            events.Event("RayCluster", "c", "Normal", "CreatedWorkerPod", "m", n, lazy=lazy) for n in counts])

    seen(2, 2)
    assert raycluster.raycluster_events_must_count(None, "ns", "c", "CreatedWorkerPod", 12, 0.05) == 4
    seen(2, 2, lazy=False)
    with pytest.raises(AssertionError, match="12 CreatedWorkerPod event"):
        raycluster.raycluster_events_must_count(None, "ns", "c", "CreatedWorkerPod", 12, 0.05)
    seen(7, 6)
    with pytest.raises(AssertionError, match="13 CreatedWorkerPod event"):
        raycluster.raycluster_events_must_count(None, "ns", "c", "CreatedWorkerPod", 12, 0.05)
