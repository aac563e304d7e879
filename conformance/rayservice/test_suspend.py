"""RayService suspension (`spec.suspend`, KubeRay 1.7): everything the RayService runs is deleted and comes back on
resume; a suspend once committed runs to completion; a RayService created suspended creates nothing; suspending
during an upgrade removes both clusters."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import no_raycluster_must_be_created
from rayconformance.testing.expect.rayservice_suspend import (resume_must_have_reset_ready,
                                                               suspend_must_have_gone_through,
                                                               suspended_status_must_be_cleared)

# How long a test watches for something that must not happen while suspended (KubeRay's e2e watches 5 s).
QUIET_WINDOW_S = 15


@pytest.mark.feature("RayServiceSuspend")
@pytest.mark.samples("rayservice-greeter")
def test_suspend_deletes_everything_and_resume_serves_again(ctx):
    """Setting spec.suspend on a serving RayService reports Suspending=True/SuspendRequested, then
    Suspended=True/SuspendComplete with Ready=False and no active or pending RayCluster, Suspending, UpgradeInProgress
    and RollbackInProgress kept as False/SuspendComplete, no serve endpoint counted and no serviceStatus, and no
    RayCluster or Service of it is left; clearing it reports Suspended=False/RayServiceResumed with Ready reset to
    Initializing, then Ready on a new RayCluster whose serve Service answers."""
    ctx.create(ctx.samples("rayservice-greeter"))
    service = ctx.rayservice("greeter")
    old, _ = active_and_pending_clusters(service.must_be_ready())

    with service.watch() as history:
        # step 1: suspended, nothing of it left
        service.suspend()
        suspended_status_must_be_cleared(service.must_be_suspended())
        service.must_create_nothing_while_suspended(QUIET_WINDOW_S)

        # step 2: resumed, serving again from a new RayCluster
        service.resume()
        new, _ = active_and_pending_clusters(service.must_be_ready())
        service.serve_service_must_answer()
    history.must_not_have_failed()

    # step 3: the conditions went through suspend and resume in order
    versions = history.snapshot()
    suspend_must_have_gone_through(versions, service.name)
    resume_must_have_reset_ready(versions, service.name)
    assert new != old, f"a resumed RayService runs a new RayCluster (its old one, {old}, was deleted); observed {new}"


@pytest.mark.feature("RayServiceSuspend")
@pytest.mark.samples("rayservice-greeter")
def test_created_suspended_creates_nothing_until_resumed(ctx):
    """A RayService created with spec.suspend reports Suspended=True and never creates a RayCluster or Service while
    it stays suspended (not even one it deletes again); resumed, it becomes Ready and answers."""
    docs = ctx.samples("rayservice-greeter")
    for d in docs:
        if d["kind"] == "RayService":
            d["spec"]["suspend"] = True
    with ctx.watch("RayCluster") as clusters:
        ctx.create(docs)
        service = ctx.rayservice("greeter")

        # step 1: suspended from the start, nothing created, then or since
        service.must_be_suspended()
        service.must_create_nothing_while_suspended(QUIET_WINDOW_S)
    no_raycluster_must_be_created(clusters, through=f"RayService {service.name} created suspended, until resumed")

    # step 2: resumed, it serves
    service.resume()
    service.must_be_ready()
    service.serve_service_must_answer()


@pytest.mark.feature("RayServiceSuspend")
@pytest.mark.samples("rayservice-greeter")
def test_suspend_runs_to_completion_once_committed(ctx):
    """A suspend is atomic: once Suspending=True is reported, clearing spec.suspend again, and setting it once more,
    changes nothing while its RayCluster is still being deleted (held here by a finalizer); when the cluster goes,
    the RayService reaches Suspended and then, spec.suspend being false at last, resumes and serves from a new
    RayCluster."""
    ctx.create(ctx.samples("rayservice-greeter"))
    service = ctx.rayservice("greeter")
    old, _ = active_and_pending_clusters(service.must_be_ready())
    cluster = ctx.raycluster(old)
    with cluster.held():
        # step 1: suspend; the RayCluster cannot go yet
        service.suspend()
        service.must_report_condition("Suspending", "True", "SuspendInProgress")

        # step 2: changing one's mind, twice, does not change a committed suspend
        service.resume()
        service.must_keep_suspending(QUIET_WINDOW_S, why="spec.suspend cleared while its RayCluster is being deleted")
        service.suspend()
        service.must_keep_suspending(QUIET_WINDOW_S, why="spec.suspend set again while its RayCluster is being deleted")
        service.resume()

    # step 3: the suspend completes, then the RayService resumes and serves from a new RayCluster
    cluster.must_be_gone(after="the suspend released its finalizer")
    new, _ = active_and_pending_clusters(service.must_be_ready())
    service.serve_service_must_answer()
    assert new != old, f"after the suspend completed, the RayService must run a new RayCluster; observed {new}"


@pytest.mark.feature("RayServiceSuspend", "RayServiceZeroDowntimeUpgrade")
@pytest.mark.samples("rayservice-greeter")
def test_suspend_during_upgrade_removes_both_clusters(ctx):
    """Suspending a RayService during a NewCluster upgrade deletes both the active and the pending RayCluster and
    reports Suspended; resumed, it becomes Ready on one new RayCluster with the upgraded spec."""
    ctx.create(ctx.samples("rayservice-greeter"))
    service = ctx.rayservice("greeter")
    obj = service.must_be_ready()
    old, _ = active_and_pending_clusters(obj)

    # step 1: an upgrade is under way (a pending RayCluster exists)
    service.trigger_upgrade("suspended-upgrade")
    pending = service.must_have_pending_cluster()

    # step 2: suspended: both clusters gone
    service.suspend()
    service.must_be_suspended()
    for name in (old, pending):
        ctx.raycluster(name).must_be_gone(after="the RayService was suspended")

    # step 3: resumed with the upgraded spec
    service.resume()
    new, _ = active_and_pending_clusters(service.must_be_ready())
    env = {e["name"]: e.get("value") for e in ctx.raycluster(new).get()["spec"]["headGroupSpec"]["template"]["spec"]
           ["containers"][0].get("env", [])}
    assert env.get("RAYCONFORMANCE_UPGRADE") == "suspended-upgrade", \
        (f"resumed, RayService greeter must run its upgraded spec (head env RAYCONFORMANCE_UPGRADE=suspended-upgrade);"
         f" observed RayCluster {new} with env {env}")
    service.serve_service_must_answer()
