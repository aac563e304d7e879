"""Ray token authentication (spec.authOptions mode token; KubeRay v1.5.1+, Ray >= 2.52): the operator creates the
cluster's token Secret and wires the token into Ray, Ray's dashboard refuses requests without it, and a RayJob
and a RayService still work with auth on."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.rayservice import active_and_pending_clusters

from rayconformance.testing.axes import in_mode, submission_modes, submitter_must_match_mode

WRONG_TOKEN = "not-the-cluster-token"


@pytest.mark.feature("RayClusterTokenAuth")
@pytest.mark.samples("raycluster-token-auth")
def test_token_auth_guards_the_dashboard(ctx):
    """With token authentication on, the operator creates a Secret holding the cluster's token; Ray's dashboard
    refuses a request without the token and one with a wrong token, and accepts one carrying the cluster's
    token, which shows the head and the worker joined."""
    cluster = ctx.create_raycluster("raycluster-token-auth")
    cluster.must_be_provisioned(ctx.timeouts.medium)

    token = cluster.auth_secret_must_hold_token()
    cluster.dashboard_must_refuse(what="a request without the token")
    cluster.dashboard_must_refuse(token=WRONG_TOKEN, what="a request with a wrong token")
    cluster.ray_must_list_alive_nodes(2, token=token)


@pytest.mark.feature("RayClusterTokenAuth")
@pytest.mark.parametrize("mode", submission_modes())
@pytest.mark.samples("rayjob-token-auth")
def test_rayjob_succeeds_with_token_auth(ctx, mode):
    """A RayJob whose cluster has token authentication on runs to completion (SUCCEEDED/Complete) in every
    submission mode: its submitter (a submitter Job, the operator itself in HTTPMode, the head's submitter
    container in SidecarMode) gets through to Ray's Jobs API, while the cluster's dashboard refuses requests
    without the token."""
    job = ctx.create_rayjob(in_mode(ctx.sample("rayjob-token-auth"), mode))

    cluster = job.must_create_its_cluster(ctx.timeouts.medium)
    cluster.must_be_provisioned(ctx.timeouts.medium)
    cluster.dashboard_must_refuse(what="a request without the token")
    job.must_succeed(when=f"with token authentication on, in {mode}")
    submitter_must_match_mode(ctx, job, mode, cluster_kept=True)


@pytest.mark.feature("RayClusterTokenAuth", "RayServiceReady")
@pytest.mark.samples("rayservice-greeter", "rayservice-token-auth")
def test_rayservice_serves_with_token_auth(ctx):
    """A RayService whose cluster has token authentication on becomes Ready and its serve Service answers with
    the application's reply (the operator deploys the Serve application through the authenticated dashboard),
    while the cluster's dashboard refuses requests without the token."""
    greeter = [d for d in ctx.samples("rayservice-greeter") if d["kind"] == "ConfigMap"]
    service = ctx.samples("rayservice-token-auth")
    ctx.create(greeter + service)
    rayservice = ctx.rayservice(next(d for d in service if d["kind"] == "RayService")["metadata"]["name"])
    active, _ = active_and_pending_clusters(rayservice.must_be_ready())

    cluster = ctx.raycluster(active)
    assert cluster.get() is not None, f"the RayService's active RayCluster {active} does not exist"
    cluster.dashboard_must_refuse(what="a request without the token")
    rayservice.serve_service_must_answer(body=f"v1 from {active}")
