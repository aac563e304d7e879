"""RayJobs on an existing RayCluster (clusterSelector): a failing job there ends Failed and the RayCluster stays;
a RayJob managed by another controller is left alone even though its RayCluster exists, and one naming an
unknown manager is refused."""
from __future__ import annotations

import time

import pytest
from kubernetes import client

from rayconformance.testing import ray
from rayconformance.testing.expect.managed_by import object_must_be_left_alone, rejection


def head_only_cluster(ctx):
    """The RayCluster the RayJobs select (samples/raycluster-basic.yaml's "basic", its head only), created."""
    body = ctx.sample("raycluster-basic")
    body["spec"].pop("workerGroupSpecs", None)  # the head is enough for the jobs
    return ctx.create_raycluster(body)


@pytest.mark.feature("RayJobClusterSelector")
@pytest.mark.samples("raycluster-basic", "rayjob-cluster-selector")
def test_failing_job_on_selected_cluster_ends_failed(ctx):
    """A RayJob whose clusterSelector names an existing RayCluster and whose entrypoint exits non-zero runs there
    and ends with jobStatus FAILED, jobDeploymentStatus Failed and reason AppFailed; the RayCluster stays."""
    cluster = head_only_cluster(ctx)
    cluster.must_be_provisioned()
    body = ctx.sample("rayjob-cluster-selector")
    body["metadata"]["name"] = "fails-on-basic"
    body["spec"]["entrypoint"] = "python -c \"import sys; print('rayconformance job fails'); sys.exit(1)\""
    job = ctx.create_rayjob(body)

    # step 1: the job fails on the selected RayCluster
    obj = job.must_finish(job_status="FAILED", deployment_status="Failed", reason="AppFailed",
                          when=f"for an entrypoint exiting 1 on RayCluster {cluster.name}")
    assert ray.status(obj).get("rayClusterName") == cluster.name, \
        (f"expected RayJob {job.name} to run on RayCluster {cluster.name} (its clusterSelector); observed "
         f"rayClusterName={ray.status(obj).get('rayClusterName')!r}")

    # step 2: the RayCluster, not the RayJob's, stays
    cluster.must_remain(time.time() + 15, why="after a RayJob that selected it failed")


@pytest.mark.feature("RayJobClusterSelector", "RayJobManagedBy")
@pytest.mark.samples("raycluster-basic", "rayjob-cluster-selector", "rayjob-basic")
def test_selector_job_managed_elsewhere_is_left_alone(ctx):
    """A RayJob that selects an existing RayCluster but whose spec.managedBy names another controller (MultiKueue)
    is left alone: no status, no finalizer, no submitter Job; the operator does handle a RayJob of its own beside
    it (created suspended, that one reports Suspended). The same RayJob naming a manager that is neither the
    operator nor MultiKueue is refused (HTTP 422)."""
    cluster = head_only_cluster(ctx)
    body = ctx.sample("rayjob-cluster-selector")
    body["metadata"]["name"] = "on-basic-managed-elsewhere"
    body["spec"]["managedBy"] = manager = "kueue.x-k8s.io/multikueue"
    job = ctx.create_rayjob(body)
    witness = ctx.sample("rayjob-basic")  # the operator's own, created suspended: it makes nothing
    witness["spec"]["suspend"] = True

    # step 1: the operator is at work in this namespace: it handled its own RayJob
    ctx.create_rayjob(witness).must_be_suspended()

    # step 2: it leaves the other controller's RayJob alone, though the RayCluster it selects exists
    def jobs() -> list[str]:
        return [j.metadata.name for j in client.BatchV1Api(ctx.k8s).list_namespaced_job(ctx.namespace).items]

    object_must_be_left_alone(ctx.k8s, ctx.namespace, "RayJob", job.name, 15, {"Jobs": jobs},
                              why=f"spec.managedBy={manager}, clusterSelector ray.io/cluster={cluster.name}")

    # step 3: an unknown manager is refused
    other = ctx.sample("rayjob-cluster-selector")
    other["metadata"]["name"], other["spec"]["managedBy"] = "on-basic-unknown-manager", "invalid.com/controller"
    refused = rejection(lambda: ctx.create_rayjob(other))
    assert refused and refused[0] == 422, \
        (f"expected a RayJob with clusterSelector and spec.managedBy=invalid.com/controller to be refused (HTTP "
         f"422); observed {'it created' if not refused else refused}")
