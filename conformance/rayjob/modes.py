"""The submission modes a RayJob behavior is run in, and how a RayJob in each mode submits its job: K8sJobMode
through a submitter Job of its own, HTTPMode by the operator's own request to Ray's Jobs API (no Kubernetes Job),
SidecarMode from a container the operator adds to the Ray head Pod (no Kubernetes Job either)."""
from __future__ import annotations

import pytest

# each mode and the feature a profile claims for it
FEATURES = {"K8sJobMode": "RayJobK8sJobMode", "HTTPMode": "RayJobHTTPMode", "SidecarMode": "RayJobSidecarMode"}


def submission_modes(*modes: str) -> list:
    """One pytest parameter per mode (all of them if none is named), its id the mode's name and marked with the
    mode's feature: a profile that does not claim a mode skips only that mode's run."""
    return [pytest.param(m, id=m, marks=pytest.mark.feature(FEATURES[m])) for m in modes or FEATURES]


def in_mode(body: dict, mode: str) -> dict:
    """The RayJob `body` set to submit in `mode`."""
    body["spec"]["submissionMode"] = mode
    return body


def submitter_must_match_mode(ctx, job, mode: str, *, cluster_kept: bool = False) -> None:
    """The RayJob, having run its job, submitted it the way `mode` says: in K8sJobMode through one submitter Job
    it owns; in HTTPMode and SidecarMode without any Kubernetes Job; and (SidecarMode, while its RayCluster is
    `cluster_kept`) from a container beside the RayJob's own containers in the head Pod."""
    __tracebackhide__ = True
    if mode == "K8sJobMode":
        jobs = [j.metadata.name for j in job.submitter_jobs()]
        assert len(jobs) == 1, f"expected one submitter Job owned by RayJob {job.name} in K8sJobMode; observed {jobs}"
        return
    jobs = [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items]
    assert not jobs, f"expected no Kubernetes Job in {mode} (the submitter is no Job); observed Jobs {jobs}"
    if mode == "SidecarMode" and cluster_kept:
        template = job.get()["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
        own = {c["name"] for c in template["spec"]["containers"]}
        head = job.cluster().head_pod()
        names = [c.name for c in head.spec.containers]
        assert [n for n in names if n not in own], \
            (f"expected a submitter container beside the Ray head in head Pod {head.metadata.name} (SidecarMode); "
             f"observed only the RayJob's own containers {names}")
