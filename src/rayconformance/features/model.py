"""What a conformance feature is: a named behavior of one resource, at a level, maybe from a Ray release on."""
from __future__ import annotations

from dataclasses import dataclass

RESOURCES = ("RayCluster", "RayJob", "RayService", "RayCronJob")
LEVELS = ("core", "extended")


@dataclass(frozen=True)
class Feature:
    name: str
    resource: str  # one of RESOURCES: the resource the behavior is of
    level: str  # one of LEVELS
    description: str
    min_ray: str | None = None  # the oldest Ray release (MAJOR.MINOR.PATCH) the behavior exists in, if not every one
