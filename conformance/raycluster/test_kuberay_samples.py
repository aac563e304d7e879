"""KubeRay's own RayCluster samples (`config/samples` of the release under test, read from its module or source
tree at run time, applied unchanged): each comes up, reports the conditions and Pods its worker groups ask for,
runs a Ray driver in every Pod, and reports the loss of all its Pods under a quota that admits none. The samples
are those KubeRay's own sample tests (test/sampleyaml, TestRayCluster) apply."""
from __future__ import annotations

import pytest

from rayconformance.testing import kuberay_samples
from rayconformance.testing.expect.kuberay_samples import (condition_must_become, driver_must_run_in_every_pod,
                                                              pods_must_match_replicas)
from rayconformance.testing.expect.quotas import resource_quota_must_be_in_force

NO_PODS = {"cpu": "0", "memory": "0", "pods": "0"}
QUOTA = "no-pods-allowed"

# KubeRay's list (test/sampleyaml/raycluster_test.go, v1.6.2), in its order; the sample's own nodes' requests fit
# the local bed as written (its nodes declare 16 CPUs and 32Gi each), so none is capped
SAMPLES = [
    "ray-cluster.autoscaler-v2.yaml",
    "ray-cluster.autoscaler.yaml",
    "ray-cluster.complete.yaml",
    "ray-cluster.custom-head-service.yaml",
    "ray-cluster.deprecate-gcs-ft.yaml",
    "ray-cluster.persistent-redis.yaml",
    "ray-cluster.embed-grafana.yaml",
    "ray-cluster.external-redis-uri.yaml",
    "ray-cluster.external-redis.yaml",
    "ray-cluster.head-command.yaml",
    "ray-cluster.overwrite-command.yaml",
    "ray-cluster.py-spy.yaml",
    "ray-cluster.sample.yaml",
    "ray-cluster.separate-ingress.yaml",
    "ray-cluster.tls.yaml",
]
# KubeRay's list also has ray-cluster.fluentbit.yaml: its log sidecar's image (fluent/fluent-bit) cannot be built
# offline, so it is not run (a test that could never run here would only be a skip in every report)


def _lift_quota_and_remove(ctx, made: list[dict], cluster, *, strict: bool) -> None:
    """The cluster is deleted first (no new Pods for it), then the quota goes, so the operator's finalizers (the
    Redis cleanup Job, with the sample's Redis back) can run. With `strict` (the test's checks passed) the deletion
    is one more check: a finalizer the operator never lets go, or a failed cleanup, fails the test. After a failed
    check it is a warning, so the first failure stays the test's result (the namespace's deletion takes what is
    left)."""
    import warnings

    from kubernetes.client import ApiException

    try:
        cluster.delete()
        try:
            ctx.core.delete_namespaced_resource_quota(QUOTA, ctx.namespace)
        except ApiException as e:
            if e.status != 404:
                raise
        problems = kuberay_samples.remove_ray_resources(ctx.k8s, ctx.namespace, made, ctx.timeouts.long)
    except Exception as e:  # noqa: BLE001 - reported below, as the test's result or as a warning
        problems = [f"cleaning up KubeRay's sample failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"]
    if strict:
        assert not problems, ("deleting KubeRay's sample (its quota lifted, what it uses still running) must let "
                              f"its Ray resources go within {ctx.timeouts.long:g}s; observed: " + "; ".join(problems))
    for line in problems:
        warnings.warn(line)


@pytest.mark.feature("RayClusterKubeRaySamples")
@pytest.mark.samples()  # none of samples/: KubeRay's own, from the release under test
@pytest.mark.parametrize("sample", SAMPLES)
def test_kuberay_raycluster_sample(ctx, conformance_options, sample):
    """KubeRay's RayCluster sample, applied as is, reports HeadPodReady=True/HeadPodRunningAndReady and
    RayClusterProvisioned=True/AllPodRunningAndReadyFirstTime, and by then runs one head and as many worker Pods
    as its worker groups' replicas, all Running and Ready (status.desiredWorkerReplicas the same count), and
    reaches status.state ready; a Ray driver started in each of its Pods connects to the cluster and succeeds.
    Once a ResourceQuota admits no Pod and all Pods are deleted, it reports HeadPodReady=False/HeadPodNotFound and
    ReplicaFailure=True/FailedCreateHeadPod, while RayClusterProvisioned stays True. Deleted then (the quota lifted),
    all of it goes: the operator lets go of every finalizer it holds."""
    path, objs = kuberay_samples.for_test(conformance_options, sample)
    made = kuberay_samples.apply(ctx.k8s, ctx.namespace, path, objs)
    name = next(o["metadata"]["name"] for o in made if o["kind"] == "RayCluster")
    cluster = ctx.raycluster(name)
    checked = False
    try:
        # step 1: the head is ready, then the whole cluster, with the Pods its replicas ask for
        condition_must_become(ctx.k8s, ctx.namespace, "RayCluster", name, "HeadPodReady", "True",
                              "HeadPodRunningAndReady", ctx.timeouts.long)
        obj = condition_must_become(ctx.k8s, ctx.namespace, "RayCluster", name, "RayClusterProvisioned", "True",
                                    "AllPodRunningAndReadyFirstTime", ctx.timeouts.long)
        pods_must_match_replicas(ctx.k8s, ctx.namespace, obj, when="once RayClusterProvisioned=True")
        obj = cluster.must_report_state("ready")

        # step 2: a Ray driver in every Pod reaches the cluster
        driver_must_run_in_every_pod(ctx.k8s, ctx.namespace, obj, ctx.timeouts.pods)

        # step 3: no Pod may be created any more, and all are deleted
        ctx.core.create_namespaced_resource_quota(ctx.namespace, {"metadata": {"name": QUOTA},
                                                                  "spec": {"hard": NO_PODS}})
        resource_quota_must_be_in_force(ctx.k8s, ctx.namespace, QUOTA, NO_PODS, ctx.timeouts.state)
        ctx.core.delete_collection_namespaced_pod(ctx.namespace)
        for ctype, status, reason in (("HeadPodReady", "False", "HeadPodNotFound"),
                                      ("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"),
                                      ("ReplicaFailure", "True", "FailedCreateHeadPod")):
            condition_must_become(ctx.k8s, ctx.namespace, "RayCluster", name, ctype, status, reason,
                                  ctx.timeouts.pods, when="once all Pods are deleted under a quota of 0 Pods")
        checked = True
    finally:
        # step 4: deleting the sample lets all of it go
        _lift_quota_and_remove(ctx, made, cluster, strict=checked)
