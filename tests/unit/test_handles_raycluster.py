"""testing.handles.raycluster: every must-hold of a RayCluster handle is a `must` of its check (the subject the check
takes, the operation's default timeout or none), and `held()` keeps the RayCluster from going for a block only."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect import raycluster as expect
from rayconformance.testing.expect import raycluster_pods, raycluster_ray
from rayconformance.testing.handles.raycluster import HOLD

from . import test_handles_rayjob

ctx = test_handles_rayjob.ctx  # the fixture: a Context with no cluster behind it


def test_the_check_gets_the_subject_it_takes_and_the_operations_timeout(ctx, monkeypatch):
    seen = []
    obj = {"metadata": {"name": "c"}, "status": {"head": {"serviceName": "c-head-svc"}}}
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: obj)
    monkeypatch.setattr(expect, "raycluster_must_be_gone", lambda api, ns, name, timeout: seen.append((name, timeout)))
    monkeypatch.setattr(raycluster_ray, "serve_must_answer",
                        lambda api, ns, o, body, timeout: seen.append((o, body, timeout)))
    monkeypatch.setattr(raycluster_ray, "ray_job_must_succeed",
                        lambda api, ns, svc, code, timeout: seen.append((svc, code, timeout)))
    monkeypatch.setattr(raycluster_pods, "workers_must_be_kept",
                        lambda api, ns, name, before, *, through: seen.append((name, before, through)))
    cluster = ctx.raycluster("c")
    cluster.must_be_gone()
    cluster.serve_must_answer("hi", 9)
    cluster.ray_job_must_succeed("print(1)", timeout=7)
    cluster.workers_must_be_kept({}, through="an update")
    assert seen == [("c", ctx.timeouts.gone), (obj, "hi", 9), ("c-head-svc", "print(1)", 7), ("c", {}, "an update")]
    with pytest.raises(TypeError):
        cluster.workers_must_be_kept({}, through="an update", timeout=3)  # a check without a timeout takes none


def test_held_keeps_the_cluster_for_the_block_only_whatever_happens_in_it(ctx, monkeypatch):
    obj = {"metadata": {"name": "c", "finalizers": ["other"]}}
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: obj)
    monkeypatch.setattr(ray.RayResources, "patch", lambda self, name, body: obj["metadata"].update(body["metadata"]))
    cluster = ctx.raycluster("c")
    with pytest.raises(RuntimeError):
        with cluster.held() as held:
            assert held is cluster and obj["metadata"]["finalizers"] == ["other", HOLD]
            raise RuntimeError("the test failed inside")
    assert obj["metadata"]["finalizers"] == ["other"]
