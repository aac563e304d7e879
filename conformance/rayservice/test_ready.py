"""RayService readiness (serviceStatus following it both ways) and in-place update of the Serve configuration."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import condition_must_be
from rayconformance.testing.expect.rayservice import active_and_pending_clusters, describe_rayservice
from rayconformance.testing.expect.rayservice_history import no_raycluster_must_be_created

from .helpers import ON_THE_HEAD, ON_THE_WORKER, deploy, greeter, place_replica, with_reply


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
    serve Service answers with the new reply, no new RayCluster is created, and no Pod of the namespace is created
    or deleted on the way (every Pod watched from before the change until the new reply answers)."""
    service, obj = deploy(ctx)
    cluster, _ = active_and_pending_clusters(obj)

    with ctx.watch_pods(None, node_type=None) as pods, ctx.watch("RayCluster") as clusters:
        # step 1: only serveConfigV2 changes (the greeter's reply)
        service.patch({"spec": {"serveConfigV2": with_reply(obj, "v2")}})

        # step 2: the new reply answers, and meanwhile no Pod came or went
        service.must_answer_in_place(pods, f"v2 from {cluster}", change="a serveConfigV2-only change")

        # step 3: on the same RayCluster, and no other was created
        no_raycluster_must_be_created(clusters, through="a serveConfigV2-only change")
    now = service.get()
    active, pending = active_and_pending_clusters(now)
    assert active == cluster and not pending, \
        f"a serveConfigV2-only change must not create a new RayCluster: {describe_rayservice(now)}"
    service.must_have_only_cluster(cluster)


@pytest.mark.feature("RayServiceServiceStatus")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-endpoints")
def test_service_status_follows_ready_both_ways(ctx):
    """A RayService's serviceStatus says "Running" exactly when it is Ready, in both directions: empty while it
    initializes, Running once Ready, empty again with Ready=False (ZeroServeEndpoints) when its serve Service is
    left with no endpoint (its one replica moved to the head, which is kept out of the serve Service, so Serve
    stops the worker's proxy and the worker's readiness probe fails), and Running again once the replica is back on
    the worker. Every version of the RayService is watched from its creation on."""
    docs = greeter(ctx, "rayservice-greeter-endpoints")
    body = next(d for d in docs if d["kind"] == "RayService")
    body["spec"]["excludeHeadPodFromServeSvc"] = True
    service = ctx.rayservice(body["metadata"]["name"])

    with service.watch() as watch:
        # step 1: created, it initializes and then becomes Ready
        ctx.create(docs)
        obj = service.must_be_ready()

        # step 2: the only replica moves to the head: no serve endpoint is left, and the RayService says so
        obj = place_replica(service, obj, ON_THE_HEAD)
        service.must_report_condition("Ready", "False", "ZeroServeEndpoints", ctx.timeouts.pods)

        # step 3: the replica back on the worker: Ready again
        place_replica(service, obj, ON_THE_WORKER)
        service.must_report_condition("Ready", "True", "NonZeroServeEndpoints", ctx.timeouts.pods)
        service.serve_service_must_answer()

        # step 4: serviceStatus followed Ready in every version seen, through each of these states in turn
        service.service_status_must_follow_ready(
            watch, [("False", "Initializing"), ("True", "NonZeroServeEndpoints"), ("False", "ZeroServeEndpoints"),
                    ("True", "NonZeroServeEndpoints")],
            through="its creation, losing its serve endpoints and getting them back")
