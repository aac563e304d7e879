"""A RayCronJob's jobTemplate reaches the RayJob each tick creates unchanged, whatever RayJob fields it sets: all of
them, over a few RayCronJobs (testing/copied_job_templates.py: RayJob fields that exclude each other, and each
cluster spec the RayJob and RayService copy tests write). What each RayJob then does with its fields, and the
RayCluster it makes with its rayClusterSpec, are the RayJob tests' to assert, so each template field counts as
asserted through the chain of copies RayCronJob -> RayJob -> RayCluster (src/rayconformance/fieldcov/copies.py).

KubeRay v1.7.0 makes a RayJob's spec a copy of the jobTemplate as it is (raycronjob_controller.go
constructRayJob) and refuses a RayCronJob whose template would be refused as a RayJob spec (ValidateRayCronJobSpec):
the templates' RayJobs are suspended, or managed by another controller, so that none starts anything.
"""
from __future__ import annotations

import copy

import pytest

from rayconformance.testing.copied_job_templates import COPIED, EVERY_COPIED, job_template
from rayconformance.testing.copied_specs import EVERY_CASE_FEATURE
from rayconformance.testing.expect.raycronjob import next_tick

from .helpers import SAMPLE


@pytest.mark.feature("RayCronJobSchedule", "RayJobDeletionRules", "RayJobManagedBy", *EVERY_CASE_FEATURE)
@pytest.mark.samples(SAMPLE)
def test_every_template_field_reaches_the_rayjob_unchanged(ctx):
    """RayCronJobs whose jobTemplates set every field a RayJob can carry (its submitter's Pod template and config,
    deletion policies or rules, a cluster selector, managedBy, a job ID, deadlines, the entrypoint's resources, and
    cluster specs with as many RayCluster fields as one spec can hold) each create, at their first tick, a RayJob
    whose spec has every value of the template, unchanged."""
    sample = ctx.sample(SAMPLE)
    image = sample["spec"]["jobTemplate"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0][
        "image"]
    crons = {}
    for case in COPIED:  # all at once: their first ticks come together
        body = copy.deepcopy(sample)
        body["metadata"]["name"] = "copied-" + case.replace(".", "")
        body["spec"]["jobTemplate"] = job_template(case, image, ctx.ray_version)
        crons[case] = ctx.create_raycronjob(body)
    scheduled = {case: cron.must_schedule(tick_after=next_tick(cron.created())) for case, cron in crons.items()}
    for cron in crons.values():
        cron.suspend()
    for case, cron in crons.items():
        cron.rayjob_must_carry_its_template(scheduled[case], COPIED[case])
    ctx.covers_copied("RayCronJob:spec.jobTemplate", "RayJob:spec", EVERY_COPIED)
