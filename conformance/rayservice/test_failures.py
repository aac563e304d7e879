"""RayServices that cannot work fail visibly: one whose cluster never starts gives up after its
initializing timeout (while a healthy one with a timeout is not failed by it), and an invalid one is rejected
without anything being created for it."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition, has_condition
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, describe_rayservice, is_ready,
                                                       rayservice_clusters_must_be_gone, rayservice_events,
                                                       rayservice_events_must_include, rayservice_must_be_ready,
                                                       rayservice_must_have_condition, serve_service_must_answer)

from .helpers import ObjectWatch, distinct_states


@pytest.mark.feature("RayServiceInitializingTimeout")
def test_initializing_timeout_fails_a_service_that_never_starts(k8s, namespace, ray_version, timeouts):
    """A RayService annotated `ray.io/initializing-timeout: 20s` whose RayCluster can never start does not hang:
    once the timeout has passed it reports Ready=False with reason InitializingTimeout, forgets its RayClusters
    and deletes them, and records a Warning event RayServiceInitializingTimeout."""
    body = ray.sample("rayservice-never-ready", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayService").create(body)

    # step 1: it gives up, saying why, and points at no RayCluster any more
    obj = rayservice_must_have_condition(k8s, namespace, name, "Ready", "False", "InitializingTimeout",
                                         timeouts.medium)
    message = (condition(obj, "Ready") or {}).get("message") or ""
    assert "failed to become ready within the configured timeout" in message, \
        f"expected the Ready message to name the initializing timeout, observed {message!r}"
    assert not any(active_and_pending_clusters(obj)), \
        f"expected no active or pending RayCluster after the timeout, observed {describe_rayservice(obj)}"

    # step 2: its RayClusters are deleted
    rayservice_clusters_must_be_gone(k8s, namespace, name, timeouts.medium, after="the initializing timeout")

    # step 3: a Warning event says so (`kubectl describe rayservice`)
    rayservice_events_must_include(k8s, namespace, name, [("Warning", "RayServiceInitializingTimeout", None)],
                                   timeouts.short)


def timed_out(obj: dict) -> bool:
    return has_condition(obj, "Ready", "False", "InitializingTimeout")


@pytest.mark.feature("RayServiceInitializingTimeout")
def test_healthy_service_is_not_failed_by_its_initializing_timeout(k8s, namespace, ray_version, timeouts):
    """A RayService annotated `ray.io/initializing-timeout: "600"` (whole seconds, the annotation's other form)
    that starts normally becomes Ready and serves; its timeout never fires on the way (Ready is never False with
    reason InitializingTimeout) and no RayServiceInitializingTimeout event is recorded."""
    docs = ray.load_sample("rayservice-greeter", ray_version)
    body = next(d for d in docs if d["kind"] == "RayService")
    name = body["metadata"]["name"]
    body["metadata"].setdefault("annotations", {})["ray.io/initializing-timeout"] = "600"

    with ObjectWatch(k8s, namespace, "rayservices", name) as watch:
        # step 1: it becomes Ready, and is not given up on before that
        ray.create_objects(k8s, namespace, docs)
        outcome = watch.first(lambda v: is_ready(v.obj) or timed_out(v.obj), timeouts.long)
        assert outcome is not None and not timed_out(outcome.obj), \
            (f"a RayService with a 600 s initializing timeout that starts normally must become Ready=True, not fail "
             f"the timeout; states seen: {distinct_states(watch.snapshot())}")
        obj = rayservice_must_be_ready(k8s, namespace, name, timeouts.medium)
        serve_service_must_answer(k8s, namespace, obj, timeouts.medium)
    watch.must_not_have_failed()

    # step 2: the timeout never fired, neither in its conditions nor in its events
    fired = [v for v in watch.snapshot() if timed_out(v.obj)]
    events = [(e.type, e.reason) for e in rayservice_events(k8s, namespace, name)]
    assert not fired and ("Warning", "RayServiceInitializingTimeout") not in events, \
        (f"the initializing timeout must not fire for a RayService that became Ready within it; states seen: "
         f"{distinct_states(watch.snapshot())}; events: {events}")


@pytest.mark.feature("RayServiceValidation")
def test_invalid_rayservice_fails_validation_and_creates_nothing(k8s, namespace, ray_version, timeouts):
    """A RayService the operator finds invalid (it names the head Service of its RayCluster, which the RayService
    manages itself) reports Ready=False with reason ValidationFailed and records a Warning event
    InvalidRayServiceSpec, and no RayCluster, Service or Pod is created for it."""
    body = ray.sample("rayservice-invalid", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayService").create(body)

    # step 1: the status says the spec is invalid, and why
    obj = rayservice_must_have_condition(k8s, namespace, name, "Ready", "False", "ValidationFailed", timeouts.short)
    message = (condition(obj, "Ready") or {}).get("message") or ""
    assert "headService.metadata.name" in message, \
        f"expected the Ready message to name headService.metadata.name, observed {message!r}"

    # step 2: so does a Warning event
    rayservice_events_must_include(k8s, namespace, name, [("Warning", "InvalidRayServiceSpec", None)],
                                   timeouts.short)

    # step 3: nothing was created for it
    clusters = [c["metadata"]["name"] for c in ray.RayResources(k8s, namespace, "RayCluster").list()]
    services = [s.metadata.name for s in client.CoreV1Api(k8s).list_namespaced_service(namespace).items]
    pods = [p.metadata.name for p in client.CoreV1Api(k8s).list_namespaced_pod(namespace).items]
    assert not (clusters or services or pods), \
        f"an invalid RayService must create nothing; observed RayClusters {clusters}, Services {services}, Pods {pods}"
