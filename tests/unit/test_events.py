"""Events read alike whichever API the operator writes them through (core/v1 count, events.k8s.io/v1 series)."""
from __future__ import annotations

from rayconformance.fixtures import events


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
