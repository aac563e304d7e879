"""A RayJob's rayClusterSpec reaches the RayCluster the RayJob makes unchanged: every field the user set there, as
many as one spec can hold (testing/copied_specs.py), is in that RayCluster's spec with the user's value. What the
RayCluster then does with each field is what the RayCluster tests assert, so each field counts as asserted through
its copy (src/rayconformance/fieldcov/copies.py).

The changes KubeRay documents making on the way (v1.7.0 controllers/ray/rayjob_controller.go,
constructRayClusterForRayJob): in SidecarMode the head Pod template gets the submitter container after the user's
containers and restartPolicy Never; the RayCluster's labels and annotations are the RayJob's plus the operator's own
(not part of the spec). With a batch scheduler configured, K8sJobMode adds its metadata (none is, here). Fields the
owner refuses (upgradeStrategy on an owned cluster, authOptions.enableK8sTokenAuth for a RayJob) are not set.
"""
from __future__ import annotations

import pytest

from rayconformance.testing.copied_specs import COPIED, RAYJOB_CASES, cluster_spec, let_go
from rayconformance.testing.expect.copied_spec import (cluster_spec_must_be_copied, owned_raycluster_must_exist,
                                                        submitter_sidecar_undone)

SUBMISSION = {"credentials-from-secret": "SidecarMode"}  # the others keep the sample's HTTPMode (RAYJOB_CASES)


@pytest.mark.feature("RayJobClusterSpecCopied")
@pytest.mark.samples("rayjob-long-running")
@pytest.mark.parametrize("case", RAYJOB_CASES)
def test_cluster_spec_reaches_its_raycluster_unchanged(ctx, case):
    """A RayJob whose rayClusterSpec sets many RayCluster fields (a suspended cluster, so no Pod starts) gets a
    RayCluster whose spec has each of them with the value the user wrote; in SidecarMode, beside them, only the
    submitter container after the user's head containers and the head's restartPolicy Never."""
    body = ctx.sample("rayjob-long-running")
    image = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    spec = cluster_spec(case, image, ctx.ray_version)
    body["metadata"]["name"] = "copied-" + case.replace(".", "")
    body["spec"]["rayClusterSpec"] = spec
    mode = SUBMISSION.get(case)
    if mode:
        body["spec"]["submissionMode"] = mode
    job = ctx.create_rayjob(body)

    cluster = owned_raycluster_must_exist(ctx.k8s, ctx.namespace, "RayJob", job.name, ctx.timeouts.state)
    let_go(ctx, job, cluster["metadata"]["name"])  # what is copied is all there once the RayCluster exists
    cluster_spec_must_be_copied(spec, cluster, owner=f"RayJob {job.name} ({mode or 'HTTPMode'})",
                                undo=submitter_sidecar_undone(spec) if mode == "SidecarMode" else None)
    ctx.covers_copied("RayJob:spec.rayClusterSpec", "RayCluster:spec", COPIED[case])
