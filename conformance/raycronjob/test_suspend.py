"""RayCronJob suspension: a suspended RayCronJob schedules nothing, however many ticks pass; resumed, its schedule
creates RayJobs again; suspended again, it stops."""
from __future__ import annotations

import time

import pytest

from .helpers import SAMPLE, schedule_only


@pytest.mark.feature("RayCronJobSuspend")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCronJob:spec.suspend")
def test_suspended_raycronjob_schedules_nothing_until_resumed(ctx):
    """A RayCronJob created with spec.suspend true creates no RayJob through a tick of its every-minute schedule and
    sets no status.lastScheduleTime; resumed, it creates a RayJob for a tick after the resumption; suspended again,
    it creates none through the next tick."""
    body = schedule_only(ctx.sample(SAMPLE))
    body["spec"]["suspend"] = True
    cron = ctx.create_raycronjob(body)
    cron.must_schedule_nothing(why="it was created with spec.suspend true")

    resumed = time.time()
    cron.resume()
    cron.must_schedule(tick_after=resumed)

    cron.suspend()
    cron.must_schedule_nothing(why="it was suspended again")
