"""KubeRay's own RayJob samples (`config/samples` of the release under test, read from its module or source tree
at run time, applied unchanged): the InteractiveMode sample gets a ready RayCluster with the Pods its worker groups
ask for, as KubeRay's own sample test (test/sampleyaml, TestRayJobInteractiveMode) checks. KubeRay's batch samples
(TestRayJob) need the internet when their jobs start and are not run."""
from __future__ import annotations

import pytest

from rayconformance.testing import kuberay_samples, ray
from rayconformance.testing.expect.kuberay_samples import pods_must_match_replicas
from rayconformance.testing.expect.rayjob import describe_rayjob
from rayconformance.testing.waiting import wait_until

# KubeRay's TestRayJob list (test/sampleyaml/rayjob_test.go, v1.6.2) is not run: ray-job.custom-head-svc.yaml,
# ray-job.resources.yaml, ray-job.sample.yaml and ray-job.shutdown.yaml each pip-install requests and pendulum from
# PyPI when the job starts (internet egress, which no test may use); a test that could never run here would only be
# a skip in every report.
# TestRayJobInteractiveMode's: the user submits the job, so only its cluster is checked
INTERACTIVE = ["ray-job.interactive-mode.yaml"]


def _cluster_must_be_ready(ctx, job: str) -> str:
    """The RayJob names its RayCluster, which reaches status.state ready with one head and the worker Pods its
    groups ask for (replicas x numOfHosts), all Running and Ready; returns the cluster's name."""
    obj = wait_until(lambda: ctx.rayjob(job).get(), lambda o: ray.status(o).get("rayClusterName"),
                     f"RayJob {job} to name its RayCluster (status.rayClusterName)", ctx.timeouts.state,
                     render=describe_rayjob)
    name = ray.status(obj)["rayClusterName"]
    cluster = ctx.raycluster(name).must_report_state("ready", ctx.timeouts.long)
    pods_must_match_replicas(ctx.k8s, ctx.namespace, cluster, when="once its status.state is ready")
    return name


def _apply(ctx, conformance_options, sample: str) -> str:
    path, objs = kuberay_samples.for_test(conformance_options, sample)
    made = kuberay_samples.apply(ctx.k8s, ctx.namespace, path, objs)
    return next(o["metadata"]["name"] for o in made if o["kind"] == "RayJob")


@pytest.mark.feature("RayJobKubeRaySamples")
@pytest.mark.samples()  # none of samples/: KubeRay's own, from the release under test
@pytest.mark.parametrize("sample", INTERACTIVE)
def test_kuberay_interactive_rayjob_sample(ctx, conformance_options, sample):
    """KubeRay's InteractiveMode RayJob sample, applied as is, gets a RayCluster that reaches status.state ready
    with one head and the worker Pods its groups ask for, all Running and Ready (status.desiredWorkerReplicas the
    same count), ready for the user's job."""
    _cluster_must_be_ready(ctx, _apply(ctx, conformance_options, sample))
