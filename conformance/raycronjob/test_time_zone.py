"""A RayCronJob's spec.timeZone: the schedule's hours and minutes are read in that zone."""
from __future__ import annotations

import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from rayconformance.testing.expect.raycronjob import iso, next_tick, tick_of

from .helpers import SAMPLE, schedule_only

# UTC+05:45 all year (no daylight saving time): a time of day there never has UTC's minutes
ZONE = "Asia/Kathmandu"
# the least time between creating the RayCronJob and the tick it must fire at
LEAD_S = 30


@pytest.mark.feature("RayCronJobTimeZone")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCronJob:spec.timeZone", "RayCronJob:spec.schedule")
def test_schedule_is_read_in_its_time_zone(ctx):
    """A daily schedule `M H * * *` with timeZone Asia/Kathmandu fires at H:M Kathmandu time: a RayJob for that
    moment, reported as status.lastScheduleTime (read in UTC, or the operator's own zone, the same schedule is hours
    away)."""
    tick = next_tick(time.time() + LEAD_S)
    local = datetime.fromtimestamp(tick, ZoneInfo(ZONE))
    body = schedule_only(ctx.sample(SAMPLE))
    body["spec"].update(schedule=f"{local.minute} {local.hour} * * *", timeZone=ZONE)
    cron = ctx.create_raycronjob(body)
    scheduled = cron.must_schedule(tick_after=tick, due=tick)
    assert tick_of(scheduled) == tick, \
        (f"expected RayCronJob {cron.name} (schedule {body['spec']['schedule']!r} in {ZONE}) to fire at "
         f"{local:%H:%M} {ZONE}, {iso(tick)}; observed {scheduled['metadata']['name']} for "
         f"{iso(tick_of(scheduled))}")
    cron.rayjob_must_be_its_own(scheduled)
