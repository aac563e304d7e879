"""RayService readiness and in-place update of the Serve configuration."""
from __future__ import annotations

import pytest
import yaml

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import active_cluster, answer, deploy, describe, pending_cluster, status


@pytest.mark.feature("RayServiceReady")
def test_serve_app_answers_through_serve_service(k8s, namespace, ray_version, timeouts):
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    ready = ray.condition(obj, "Ready")
    assert ready["reason"] == "NonZeroServeEndpoints", f"Ready reason: expected NonZeroServeEndpoints, observed {ready}"
    assert (status(obj).get("numServeEndpoints") or 0) >= 1, f"numServeEndpoints: {describe(obj)}"
    apps = (status(obj).get("activeServiceStatus") or {}).get("applicationStatuses") or {}
    assert (apps.get("greeter") or {}).get("status") == "RUNNING", f"application statuses: {apps}"
    cluster = active_cluster(obj)
    code, body = wait_for(lambda: ((r := answer(k8s, namespace, obj))[0] == 200, r), timeouts.medium,
                          "an answer from the serve Service", observe=lambda: answer(k8s, namespace, obj))
    assert body == f"v1 from {cluster}", f"expected 'v1 from {cluster}', observed {body!r}"


@pytest.mark.feature("RayServiceInPlaceUpdate")
def test_serve_config_change_applies_in_place(k8s, namespace, ray_version, timeouts):
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, cluster = obj["metadata"]["name"], active_cluster(obj)
    cfg = yaml.safe_load(obj["spec"]["serveConfigV2"])
    cfg["applications"][0]["deployments"][0]["user_config"]["message"] = "v2"
    rs.patch(name, {"spec": {"serveConfigV2": yaml.safe_dump(cfg)}})

    wait_for(lambda: (answer(k8s, namespace, obj) == (200, f"v2 from {cluster}"), True), timeouts.medium,
             f"the serve Service to answer 'v2 from {cluster}' (same cluster)",
             observe=lambda: f"{answer(k8s, namespace, obj)}; {describe(rs.get(name))}")
    now = rs.get(name)
    assert active_cluster(now) == cluster and not pending_cluster(now), \
        f"a serveConfigV2-only change must not create a new RayCluster: {describe(now)}"
    clusters = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]
    assert clusters == [cluster], f"expected only RayCluster {cluster}, observed {clusters}"
