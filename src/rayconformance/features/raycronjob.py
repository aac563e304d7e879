"""The RayCronJob features (KubeRay 1.6+ behind its alpha feature gate RayCronJob; as v1.7.0 does it)."""
from __future__ import annotations

from .model import Feature

FEATURES: tuple[Feature, ...] = (
    Feature("RayCronJobSchedule", "RayCronJob", "core",
            "each tick of spec.schedule creates one RayJob from spec.jobTemplate (its spec unchanged), named "
            "<name>-<minutes since the epoch of the tick>, labelled ray.io/cronjob-name and controlled by the "
            "RayCronJob; status.lastScheduleTime is the tick; the RayJob runs to completion; a changed jobTemplate "
            "reaches the next RayJob only; deleting the RayCronJob deletes its RayJobs (KubeRay 1.7+)"),
    Feature("RayCronJobSuspend", "RayCronJob", "extended",
            "spec.suspend true schedules no RayJob through the ticks; resumed, the schedule creates RayJobs again"),
    Feature("RayCronJobTimeZone", "RayCronJob", "extended",
            "spec.timeZone: the schedule's hours and minutes are read in that IANA zone (KubeRay 1.7+)"),
    Feature("RayCronJobValidation", "RayCronJob", "extended",
            "an unparsable schedule, an unknown time zone, TZ= in the schedule, a name too long for its RayJobs or "
            "a jobTemplate the RayJob checks refuse: a Warning event InvalidRayCronJobSpec and no RayJob; an empty "
            "timeZone refused by the API server"),
)
