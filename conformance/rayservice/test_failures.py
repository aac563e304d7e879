"""RayServices that cannot work fail visibly: one whose cluster never starts gives up after its
initializing timeout, and an invalid one is rejected without anything being created for it."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters, describe_rayservice,
                                                       rayservice_clusters_must_be_gone,
                                                       rayservice_events_must_include,
                                                       rayservice_must_have_condition)


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
