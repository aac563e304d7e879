"""A RayService's rayClusterConfig reaches the RayCluster the RayService makes unchanged: every field the user set
there, as many as one spec can hold (testing/copied_specs.py), is in that RayCluster's spec with the user's value.
What the RayCluster then does with each field is what the RayCluster tests assert, so each field counts as asserted
through its copy (src/rayconformance/fieldcov/copies.py).

The changes KubeRay documents making on the way (v1.7.0 controllers/ray/rayservice_controller.go,
constructRayClusterForRayService): none to the spec of a RayService's first RayCluster; the pending cluster of an
incremental upgrade starts with its worker groups' replicas unset (not made here); the RayCluster's labels and
annotations are the RayService's plus the operator's own (not part of the spec). Fields the RayService refuses
(upgradeStrategy on an owned cluster, authOptions.enableK8sTokenAuth, a named headService) are not set.
"""
from __future__ import annotations

import pytest

from rayconformance.testing.copied_specs import CASES, COPIED, cluster_spec, let_go
from rayconformance.testing.expect.copied_spec import cluster_spec_must_be_copied, owned_raycluster_must_exist


@pytest.mark.feature("RayServiceClusterConfigCopied")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.parametrize("case", CASES)
def test_cluster_config_reaches_its_raycluster_unchanged(ctx, case):
    """A RayService whose rayClusterConfig sets many RayCluster fields (a suspended cluster, so no Pod starts) gets
    a RayCluster whose spec has each of them with the value the user wrote."""
    body = ctx.sample("rayservice-greeter", "RayService")
    image = body["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    spec = cluster_spec(case, image, ctx.ray_version)
    body["metadata"]["name"] = "copied-" + case.replace(".", "")
    body["spec"]["rayClusterConfig"] = spec
    service = ctx.create_rayservice(body)

    cluster = owned_raycluster_must_exist(ctx.k8s, ctx.namespace, "RayService", service.name, ctx.timeouts.state)
    let_go(ctx, service, cluster["metadata"]["name"])  # what is copied is all there once the RayCluster exists
    cluster_spec_must_be_copied(spec, cluster, owner=f"RayService {service.name}")
    ctx.covers_copied("RayService:spec.rayClusterConfig", "RayCluster:spec", COPIED[case])
