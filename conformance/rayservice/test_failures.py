"""RayServices that cannot work fail visibly: one whose cluster never starts gives up after its
initializing timeout, for good (while a healthy one with a timeout is not failed by it), and an invalid one is
rejected without anything being created for it."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.conditions import condition
from rayconformance.testing.expect.rayservice import active_and_pending_clusters, describe_rayservice
from rayconformance.testing.expect.rayservice_history import (distinct_states,
                                                               initializing_timeout_must_not_fire_early,
                                                               observed_generation, rayservice_must_stay_timed_out,
                                                               timed_out)

from .helpers import greeter

# How long the test watches a failed RayService whose spec was fixed for a RayCluster that must not come. The
# operator reconciles a changed RayService at once (and every 2 s); a new RayCluster would show within one pass.
STAYS_FAILED_WINDOW_S = 20


@pytest.mark.feature("RayServiceInitializingTimeout")
@pytest.mark.samples("rayservice-never-ready", "rayservice-greeter")
def test_initializing_timeout_fails_a_service_that_never_starts(ctx):
    """A RayService annotated `ray.io/initializing-timeout: 20s` whose RayCluster can never start does not hang:
    once the timeout has passed since it started initializing (watched: not earlier) it reports Ready=False with
    reason InitializingTimeout, having observed its current generation (status.observedGeneration), forgets its
    RayClusters and deletes them, and records a Warning event RayServiceInitializingTimeout. The failure is final:
    fixing its spec afterwards (a cluster that would start, a longer timeout) does not revive it; it stays
    Ready=False/InitializingTimeout and no RayCluster is created for it (the user deletes and recreates it to
    recover)."""
    body = ctx.sample("rayservice-never-ready")
    timeout_s = float(body["metadata"]["annotations"]["ray.io/initializing-timeout"].rstrip("s"))

    # step 1: it gives up once its timeout has passed, not before, saying why, and points at no RayCluster any more
    with ctx.watch("RayService") as history:
        service = ctx.create_rayservice(body)
        obj = service.must_report_condition("Ready", "False", "InitializingTimeout", ctx.timeouts.medium)
        initializing_timeout_must_not_fire_early(history, timeout_s, ctx.timeouts.short)
    message = (condition(obj, "Ready") or {}).get("message") or ""
    assert "failed to become ready within the configured timeout" in message, \
        f"expected the Ready message to name the initializing timeout, observed {message!r}"
    assert not any(active_and_pending_clusters(obj)), \
        f"expected no active or pending RayCluster after the timeout, observed {describe_rayservice(obj)}"
    generation = obj["metadata"]["generation"]
    assert observed_generation(obj) == generation, \
        (f"expected the failed RayService to have observed its generation {generation} (status.observedGeneration), "
         f"observed {ray.status(obj).get('observedGeneration')!r}")

    # step 2: its RayClusters are deleted
    service.clusters_must_be_gone(after="the initializing timeout")

    # step 3: a Warning event says so (`kubectl describe rayservice`)
    service.events_must_include([("Warning", "RayServiceInitializingTimeout", None)])

    # step 4: its spec is fixed (the greeter's cluster, which starts, and a 10-minute timeout) ...
    docs = greeter(ctx)
    fixed = next(d for d in docs if d["kind"] == "RayService")
    fixed["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["initContainers"] = None  # (merge patch)
    ctx.create([d for d in docs if d["kind"] == "ConfigMap"])
    with service.watch() as watch, ctx.watch("RayCluster") as clusters:
        fixed_at = watch.clock()
        patched = service.patch({"metadata": {"annotations": {"ray.io/initializing-timeout": "10m"}},
                                 "spec": {"rayClusterConfig": fixed["spec"]["rayClusterConfig"],
                                          "serveConfigV2": fixed["spec"]["serveConfigV2"]}})
        assert patched["metadata"]["generation"] > generation, \
            (f"expected fixing the spec to make a new generation (after {generation}), observed "
             f"{patched['metadata']['generation']}")

        # step 5: ... and it stays failed: no RayCluster, Ready=False/InitializingTimeout
        rayservice_must_stay_timed_out(watch, clusters, fixed_at, STAYS_FAILED_WINDOW_S,
                                       after="its spec was fixed")


@pytest.mark.feature("RayServiceInitializingTimeout")
@pytest.mark.samples("rayservice-greeter")
def test_healthy_service_is_not_failed_by_its_initializing_timeout(ctx):
    """A RayService annotated `ray.io/initializing-timeout: "600"` (whole seconds, the annotation's other form)
    that starts normally becomes Ready and serves; its timeout never fires on the way (Ready is never False with
    reason InitializingTimeout) and no RayServiceInitializingTimeout event is recorded."""
    docs = greeter(ctx)
    body = next(d for d in docs if d["kind"] == "RayService")
    body["metadata"].setdefault("annotations", {})["ray.io/initializing-timeout"] = "600"
    service = ctx.rayservice(body["metadata"]["name"])

    with service.watch() as watch:
        # step 1: it becomes Ready, and is not given up on before that
        ctx.create(docs)
        service.must_get_ready_within_its_timeout(
            watch, what="a RayService with a 600 s initializing timeout that starts normally")
        service.must_be_ready(ctx.timeouts.medium)
        service.serve_service_must_answer()
    watch.must_not_have_failed()

    # step 2: the timeout never fired, neither in its conditions nor in its events
    fired = [v for v in watch.snapshot() if timed_out(v.obj)]
    events = [(e.type, e.reason) for e in service.events()]
    assert not fired and ("Warning", "RayServiceInitializingTimeout") not in events, \
        (f"the initializing timeout must not fire for a RayService that became Ready within it; states seen: "
         f"{distinct_states(watch.snapshot())}; events: {events}")


# (case id, what is invalid, what the Ready message must name, the Warning event's reason)
INVALID = [("head-service-named", "it names its RayCluster's head Service", "headService.metadata.name",
            "InvalidRayServiceSpec"),
           ("name-too-long", "a name of 48 characters (at most 47)", "no more than 47 characters",
            "InvalidRayServiceMetadata")]


@pytest.mark.feature("RayServiceValidation")
@pytest.mark.samples("rayservice-invalid", "rayservice-greeter")
@pytest.mark.parametrize("invalid", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_rayservice_fails_validation_and_creates_nothing(ctx, invalid):
    """A RayService the operator finds invalid (it names the head Service of its RayCluster, which the RayService
    manages itself; or its name is too long for the RayClusters named after it) reports Ready=False with reason
    ValidationFailed and a message saying what is invalid, records a Warning event naming the invalid part
    (InvalidRayServiceSpec, InvalidRayServiceMetadata), and no RayCluster, Service or Pod is created for it."""
    case, why, named, reason = invalid
    if case == "name-too-long":
        body = ctx.sample("rayservice-greeter", "RayService")
        body["metadata"]["name"] = "g" * 48
    else:
        body = ctx.sample("rayservice-invalid")
    service = ctx.create_rayservice(body)

    # step 1: the status says the spec is invalid, and why
    obj = service.must_report_condition("Ready", "False", "ValidationFailed")
    message = (condition(obj, "Ready") or {}).get("message") or ""
    assert named in message, f"expected the Ready message to say {named!r} ({why}), observed {message!r}"

    # step 2: so does a Warning event
    service.events_must_include([("Warning", reason, None)])

    # step 3: nothing was created for it
    service.must_have_created_nothing(what=f"an invalid RayService ({why})")
