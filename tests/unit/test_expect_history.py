"""What the RayService tests assert over a watch of its versions (keeping its cluster through a change, the old
cluster outliving the switch, a rollback reported) and along an incremental upgrade, without a cluster."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect import incremental, raycluster_history
from rayconformance.testing.expect import rayservice_history as history
from rayconformance.testing.watch import Version

from .test_expect_serving import FakeWatch, current, rs


def generation(obj: dict, observed: int) -> dict:
    return {**obj, "status": {**obj["status"], "observedGeneration": observed}}


def test_rayservice_must_keep_cluster():
    kept = FakeWatch(("LISTED", generation(rs(), 1)), ("MODIFIED", generation(rs(), 2)))
    history.rayservice_must_keep_cluster(kept, "c", 2, 0.0, 0, what="a change")
    with pytest.raises(AssertionError, match=r"(?s)a change must not start an upgrade: expected RayCluster c active "
                                             r"and no pending one for 20s, observed at 1.0s active/pending "
                                             r"\('c', 'd'\); observed, in order:"):
        history.rayservice_must_keep_cluster(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(pending="d"))), "c", 1,
                                             0.0, 20, what="a change")
    with pytest.raises(AssertionError, match=r"expected the operator to observe generation 3 \(a change\) within "
                                             r"0s \(status.observedGeneration\)"):
        history.rayservice_must_keep_cluster(kept, "c", 3, 0.0, 0, what="a change")


def test_raycluster_must_outlive_the_switch():
    switched = Version(1.0, 1.0, "MODIFIED", rs(active="d"))
    c = {"metadata": {"name": "c"}}
    kept = FakeWatch(("LISTED", c), ("MODIFIED", c))
    raycluster_history.raycluster_must_outlive_the_switch(kept, "c", switched, 0, delay=30)
    gone = FakeWatch(("LISTED", c), ("MODIFIED", c), ("DELETED", c))
    with pytest.raises(AssertionError, match=r"expected RayCluster c to be kept for rayClusterDeletionDelaySeconds=30 "
                                             r"after the switch, observed it deleted 1.0s after the switch"):
        raycluster_history.raycluster_must_outlive_the_switch(gone, "c", switched, 0, delay=30)


def test_rayservice_switch_must_be_seen():
    assert history.rayservice_switch_must_be_seen(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(active="d"))), "c",
                                                  0).t == 1.0
    with pytest.raises(AssertionError, match=r"the watch on RayService svc never saw the switch from c"):
        history.rayservice_switch_must_be_seen(FakeWatch(("LISTED", rs())), "c", 0)


def test_rayservice_must_get_ready_within_its_timeout():
    timed_out = {"metadata": {"name": "svc"}, "status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "InitializingTimeout"}]}}
    assert history.rayservice_must_get_ready_within_its_timeout(FakeWatch(("MODIFIED", rs())), 0, what="x").t == 0.0
    with pytest.raises(AssertionError, match=r"a healthy one must become Ready=True, not fail the timeout; states "
                                             r"seen: \['Ready=False\(InitializingTimeout\)"):
        history.rayservice_must_get_ready_within_its_timeout(FakeWatch(("MODIFIED", timed_out)), 0,
                                                             what="a healthy one")


def test_rollback_reported_and_cluster_kept():
    rolling = rs()
    rolling["status"]["conditions"].append({"type": "RollbackInProgress", "status": "True", "reason": "R"})
    assert history.rayservice_must_report_rollback(FakeWatch(("LISTED", rs()), ("MODIFIED", rolling)), "svc", 0).t == 1
    with pytest.raises(AssertionError, match=r"(?s)RayService svc must report RollbackInProgress=True; observed, in "
                                             r"order:\n  Ready=True"):
        history.rayservice_must_report_rollback(FakeWatch(("LISTED", rs())), "svc", 0)
    history.rayservice_must_have_stayed_on(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(pending="d"))), "c",
                                           through="the rollback")
    with pytest.raises(AssertionError, match=r"RayCluster c must stay the active one through the rollback; observed "
                                             r"active d at 1.0s"):
        history.rayservice_must_have_stayed_on(FakeWatch(("LISTED", rs()), ("MODIFIED", rs(active="d"))), "c",
                                               through="the rollback")


class Gen:
    def stats(self):
        return None


def test_traffic_must_partly_move(monkeypatch):
    obj = rs(pending="d")
    obj["status"]["pendingServiceStatus"]["trafficRoutedPercent"] = 25
    current(monkeypatch, obj)
    assert incremental.traffic_must_partly_move(None, "ns", "svc", Gen(), 1) == obj
    assert incremental.traffic(obj, "pendingServiceStatus") == (25, None, None)
    obj["status"]["pendingServiceStatus"]["trafficRoutedPercent"] = 0
    with pytest.raises(AssertionError, match=r"waiting for part of the traffic to move to the new RayCluster; last "
                                             r"observed: .*pending traffic/capacity \(0, None\); traffic no statistics"):
        incremental.traffic_must_partly_move(None, "ns", "svc", Gen(), 0.05)
