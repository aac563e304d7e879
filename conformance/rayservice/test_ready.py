"""RayService readiness and in-place update of the Serve configuration."""
from __future__ import annotations

import pytest
import yaml

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition_must_be
from rayconformance.fixtures.expect.rayservice import active_and_pending_clusters, describe_rayservice

from .helpers import deploy


@pytest.mark.feature("RayServiceReady")
@pytest.mark.samples("rayservice-greeter")
def test_serve_app_answers_through_serve_service(ctx):
    """A RayService becomes Ready (NonZeroServeEndpoints) with serve endpoints and its application RUNNING, and
    its serve Service answers with the application's reply from the active RayCluster."""
    service, obj = deploy(ctx)
    condition_must_be(obj, "Ready", "True", "NonZeroServeEndpoints")
    assert (ray.status(obj).get("numServeEndpoints") or 0) >= 1, \
        f"expected numServeEndpoints >= 1, observed {describe_rayservice(obj)}"
    apps = (ray.status(obj).get("activeServiceStatus") or {}).get("applicationStatuses") or {}
    assert (apps.get("greeter") or {}).get("status") == "RUNNING", \
        f"expected application greeter RUNNING, observed application statuses {apps}"
    cluster, _ = active_and_pending_clusters(obj)
    _, body = service.serve_service_must_answer()
    assert body == f"v1 from {cluster}", f"expected 'v1 from {cluster}', observed {body!r}"


@pytest.mark.feature("RayServiceInPlaceUpdate")
@pytest.mark.samples("rayservice-greeter")
def test_serve_config_change_applies_in_place(ctx):
    """Changing only a RayService's Serve configuration updates the application on the same RayCluster: the
    serve Service answers with the new reply, and no new RayCluster is created."""
    service, obj = deploy(ctx)
    cluster, _ = active_and_pending_clusters(obj)
    cfg = yaml.safe_load(obj["spec"]["serveConfigV2"])
    cfg["applications"][0]["deployments"][0]["user_config"]["message"] = "v2"
    service.patch({"spec": {"serveConfigV2": yaml.safe_dump(cfg)}})

    service.serve_service_must_answer(body=f"v2 from {cluster}")
    now = service.get()
    active, pending = active_and_pending_clusters(now)
    assert active == cluster and not pending, \
        f"a serveConfigV2-only change must not create a new RayCluster: {describe_rayservice(now)}"
    service.must_have_only_cluster(cluster)
