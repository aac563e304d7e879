"""Break cases for the RayCronJob conformance tests: KubeRay v1.7.0 (profile kuberay-v1.7.0, its RayCronJob gate on)
built from its source tree with one wrong decision in the RayCronJob controller."""
from __future__ import annotations

from tests.breaks.harness import Case


def v170(test: str, expect: str, patch: str) -> Case:
    """A case of `test` against v1.7.0 patched by tests/breaks/patches/v1.7.0/<patch>.patch. The tests wait for
    schedule ticks by the clock, not by the scaled timeouts, so the usual scale only shortens their other waits."""
    return Case(test, expect, profile="kuberay-v1.7.0", local=True, tree_patch=f"v1.7.0/{patch}")


CASES: list[Case] = [
    # the RayJobs made without a controller reference: not the RayCronJob's, and left when it is deleted
    v170("each_tick_creates_one_rayjob_it_owns", r"controlled by nothing, not by the RayCronJob",
         "raycronjob-rayjobs-not-owned"),
    v170("scheduled_rayjob_runs_to_completion", r"controlled by nothing, not by the RayCronJob",
         "raycronjob-rayjobs-not-owned"),
    v170("deleting_the_raycronjob_deletes_its_rayjobs", r"RayJob hello-cron-\d+ to be gone after its RayCronJob",
         "raycronjob-rayjobs-not-owned"),
    # every RayJob made from the jobTemplate the RayCronJob had at its first one
    v170("changed_template_reaches_the_next_rayjob", r"spec.entrypoint: .*not the template's",
         "raycronjob-template-read-once"),
    # each RayJob made without the template's deletionStrategy (its other fields copied)
    v170("every_template_field_reaches_the_rayjob_unchanged", r"spec.deletionStrategy: None, not the template's",
         "raycronjob-template-loses-deletion-strategy"),
    # the controller reads only spec.schedule and spec.jobTemplate: spec.suspend and spec.timeZone ignored, the
    # RayCronJob not validated (ValidateRayCronJobSpec not called: no Warning event, the over-long name schedules)
    v170("suspended_raycronjob_schedules_nothing_until_resumed",
         r"expected RayCronJob hello-cron to create no RayJob \(it was created with spec.suspend true\)",
         "raycronjob-spec-fields-ignored"),
    v170("schedule_is_read_in_its_time_zone", r"timed out .* waiting for RayCronJob hello-cron to create a RayJob "
         r"for its tick", "raycronjob-spec-fields-ignored"),
    v170("invalid_raycronjob_is_refused_and_schedules_nothing",
         r"a Warning event InvalidRayCronJobSpec about RayCronJob bad-schedule", "raycronjob-spec-fields-ignored"),
    # the jobTemplate not checked as a RayJob (ValidateRayCronJobSpec stops after the time zone): no Warning event
    # for a template the RayJob checks refuse; its RayJobs are created (and each fails its own validation)
    *[v170(f"rayjob_template_the_operator_refuses_is_refused_and_schedules_nothing[{case}]",
           r"a Warning event InvalidRayCronJobSpec about RayCronJob hello-cron saying 'RayJob template'",
           "raycronjob-template-not-validated")
      for case in ("k8s-token-auth", "head-labels-in-start-params", "worker-labels-in-start-params",
                   "head-redis-username")],
]
