"""What the operator refuses in a RayCronJob: a schedule it cannot parse, an unknown time zone, a time zone written
into the schedule, a name too long for its RayJobs' names (each a Warning event, and no RayJob); and what the API
server refuses: an empty timeZone."""
from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.fixtures.expect.raycronjob import no_rayjob_must_be_scheduled

from .helpers import SAMPLE, schedule_only

# RayCronJob name -> (its spec's changes, what the operator's Warning event says); each would otherwise schedule
# every minute. KubeRay keeps a RayCronJob's name to 36 characters, so that <name>-<minutes> names a valid RayJob.
REFUSED = {
    "bad-schedule": ({"schedule": "61 * * * *"}, "invalid cron schedule"),
    "unknown-zone": ({"timeZone": "Mars/Olympus_Mons"}, "invalid time zone"),
    "zone-in-schedule": ({"schedule": "CRON_TZ=UTC * * * * *"}, "use timeZone field instead"),
    "n" * 37: ({}, "no more than 36 characters"),
}


def refused_body(ctx, name: str, changes: dict) -> dict:
    body = schedule_only(ctx.sample(SAMPLE))
    body["metadata"]["name"] = name
    body["spec"].update(changes)
    return body


@pytest.mark.feature("RayCronJobValidation")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCronJob:spec.schedule", "RayCronJob:spec.timeZone")
def test_invalid_raycronjob_is_refused_and_schedules_nothing(ctx):
    """RayCronJobs with an unparsable schedule, an unknown time zone, CRON_TZ= in the schedule or a 37-character
    name each get a Warning event InvalidRayCronJobSpec saying what is wrong, and none creates a RayJob through a
    tick; a RayCronJob with an empty timeZone is refused when created."""
    try:
        ctx.create_raycronjob(refused_body(ctx, "empty-zone", {"timeZone": ""}))
        refused = "created"
    except ApiException as e:
        refused = f"{e.status}: {e.body}"
    assert refused.startswith("422") and "spec.timeZone" in refused, \
        f"expected the API server to refuse an empty spec.timeZone (422 naming spec.timeZone); observed {refused}"

    crons = {name: ctx.create_raycronjob(refused_body(ctx, name, changes)) for name, (changes, _) in REFUSED.items()}
    for name, (_, says) in REFUSED.items():
        crons[name].must_be_refused(says=says)
    no_rayjob_must_be_scheduled(ctx.k8s, ctx.namespace, why=f"the RayCronJobs {', '.join(crons)} are invalid")
