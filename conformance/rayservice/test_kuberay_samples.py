"""KubeRay's own RayService samples (`config/samples` of the release under test, read from its module or source
tree at run time, applied unchanged): each becomes Running, its head Pod ready, with serve endpoints, and every
Serve application RUNNING, as the RayService and Ray's own Serve API report. The samples are those KubeRay's own
sample tests (test/sampleyaml, TestRayService) apply."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import kuberay_samples, ray
from rayconformance.fixtures.expect.kuberay_samples import applications_must_all_run
from rayconformance.fixtures.expect.rayservice import describe_rayservice
from rayconformance.fixtures.expect.workloads import describe_pods, running_and_ready
from rayconformance.fixtures.waiting import wait_until

WORKING_DIR = ("its Serve applications' runtime_env working_dir is a zip on github.com, fetched when they deploy "
               "(internet egress, which no test may use)")
# KubeRay's list (test/sampleyaml/rayservice_test.go, v1.6.2), in its order
SAMPLES = [pytest.param(name, marks=pytest.mark.skip(reason=WORKING_DIR)) for name in (
    "ray-service.custom-serve-service.yaml",
    "ray-service.different-port.yaml",
    "ray-service.high-availability.yaml",
    "ray-service.sample.yaml",
)]


def _serve_apps(ctx, service: str) -> dict:
    code, body = ray.proxy_get(ctx.k8s, ctx.namespace, service, "dashboard", "api/serve/applications/")
    return ((ray.json_or_none(body) or {}) if code == 200 else {}).get("applications") or {}


@pytest.mark.feature("RayServiceKubeRaySamples")
@pytest.mark.samples()  # none of samples/: KubeRay's own, from the release under test
@pytest.mark.parametrize("sample", SAMPLES)
def test_kuberay_rayservice_sample(ctx, conformance_options, sample):
    """KubeRay's RayService sample, applied as is, reports serviceStatus Running; the head Pod of its active
    RayCluster is Running and Ready, status.numServeEndpoints is above zero, every Serve application in
    status.activeServiceStatus is RUNNING, and Ray's Serve API on that head reports each of them RUNNING too."""
    path, objs = kuberay_samples.for_test(conformance_options, sample)
    made = kuberay_samples.apply(ctx.k8s, ctx.namespace, path, objs)
    service = ctx.rayservice(next(o["metadata"]["name"] for o in made if o["kind"] == "RayService"))

    # step 1: Running, on an active cluster whose head is ready
    obj = wait_until(service.get, lambda o: ray.status(o).get("serviceStatus") == "Running",
                     f"RayService {service.name} to report serviceStatus Running", ctx.timeouts.long,
                     render=describe_rayservice)
    active = (ray.status(obj).get("activeServiceStatus") or {}).get("rayClusterName")
    assert active, f"a Running RayService names its active RayCluster; observed {describe_rayservice(obj)}"
    heads = ctx.raycluster(active).pods("head")
    assert len(heads) == 1 and running_and_ready(heads[0]), \
        f"expected the active RayCluster {active}'s head Pod Running+Ready; observed {describe_pods(heads)}"

    # step 2: serve endpoints, and every application RUNNING as the RayService and Ray's Serve API report
    wait_until(service.get, lambda o: (ray.status(o).get("numServeEndpoints") or 0) > 0,
               f"RayService {service.name} to report status.numServeEndpoints above 0", ctx.timeouts.pods,
               render=describe_rayservice)
    applications_must_all_run(ctx.k8s, ctx.namespace, service.name, ctx.timeouts.long)
    head_svc = ctx.raycluster(active).head_service_name()
    apps = wait_until(lambda: _serve_apps(ctx, head_svc), bool, f"Ray's Serve API on {head_svc} to list applications",
                      ctx.timeouts.pods)
    states = {name: app.get("status") for name, app in apps.items()}
    assert all(s == "RUNNING" for s in states.values()), \
        f"expected Ray's Serve API to report every application RUNNING; observed {states}"
