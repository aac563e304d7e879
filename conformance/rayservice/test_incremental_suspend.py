"""Suspending a RayService in the middle of an incremental upgrade (NewClusterWithIncrementalUpgrade) through a real
Gateway, and resuming it: as KubeRay v1.7.0's e2e TestRayServiceSuspendDuringIncrementalUpgrade."""
from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.waiting import wait_until

from .helpers import deploy, with_reply
from .test_incremental_upgrade import GATEWAY_API, incremental_service

STEP, INTERVAL, SURGE = 25, 20, 30  # KubeRay's: slow steps, so the upgrade is still under way when suspended


def gateway_objects(ctx, service) -> list[str]:
    """The RayService's Gateway and HTTPRoute that exist now."""
    co, found = client.CustomObjectsApi(ctx.k8s), []
    for plural, name in (("gateways", f"{service.name}-gateway"), ("httproutes", f"{service.name}-httproute")):
        try:
            co.get_namespaced_custom_object(*GATEWAY_API, ctx.namespace, plural, name)
            found.append(f"{plural[:-1]} {name}")
        except ApiException as e:
            if e.status != 404:
                raise
    return found


@pytest.mark.feature("RayServiceSuspend", "RayServiceIncrementalUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_suspend_during_incremental_upgrade_removes_everything(ctx, gateway):
    """Suspending a RayService while an incremental upgrade has both its RayClusters up deletes both, their
    Services, and the RayService's Gateway and HTTPRoute, and reports Suspended; resumed, it is Ready on one new
    RayCluster running the upgraded spec, its Gateway and HTTPRoute are back, and the new reply comes through the
    Gateway."""
    gateway_class = gateway()
    service, obj = deploy(ctx, incremental_service(ctx, gateway_class.class_name, STEP, INTERVAL, SURGE))
    old, _ = active_and_pending_clusters(obj)
    service.gateway_must_be_programmed()

    # step 1: an incremental upgrade is under way, both clusters up
    service.trigger_upgrade("suspended-incremental", serve_config=with_reply(obj, "v2"))
    pending = service.must_have_pending_cluster()
    assert gateway_objects(ctx, service), "an incremental upgrade runs through the RayService's Gateway and HTTPRoute"

    # step 2: suspended: both clusters, their Services, the Gateway and the HTTPRoute gone
    service.suspend()
    service.must_be_suspended()
    for name in (old, pending):
        ctx.raycluster(name).must_be_gone(after="the RayService was suspended mid-upgrade")
    wait_until(lambda: gateway_objects(ctx, service), lambda left: not left,
               f"RayService {service.name}'s Gateway and HTTPRoute to be deleted once it is suspended",
               ctx.timeouts.gone, render=lambda left: f"still there: {left}")

    # step 3: resumed on one new RayCluster with the upgraded spec, answering through its Gateway again
    service.resume()
    new, _ = active_and_pending_clusters(service.must_be_ready())
    env = {e["name"]: e.get("value") for e in ctx.raycluster(new).get()["spec"]["headGroupSpec"]["template"]["spec"]
           ["containers"][0].get("env", [])}
    assert new not in (old, pending) and env.get("RAYCONFORMANCE_UPGRADE") == "suspended-incremental", \
        (f"resumed, RayService {service.name} must run its upgraded spec on a new RayCluster (head env "
         f"RAYCONFORMANCE_UPGRADE=suspended-incremental); observed RayCluster {new} with env {env}")
    service.gateway_must_be_programmed()
    gen = service.start_traffic(url=gateway_class.url)
    service.traffic_must_get(gen, f"v2 from {new}")
    service.stop_traffic(gen)
