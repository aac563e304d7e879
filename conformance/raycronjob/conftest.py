"""What every RayCronJob test leaves behind: no schedule. Its RayCronJobs are deleted before the namespace is, so no
tick creates a RayJob (and a RayCluster) while the namespace's teardown waits for the rest to go."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_schedule_left(ctx):
    yield
    crons = ctx.resources("RayCronJob")
    for cron in crons.list():
        crons.delete(cron["metadata"]["name"])
