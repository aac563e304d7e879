"""What only the RayCronJob tests do: make the RayCronJob of samples/raycronjob-basic.yaml, as is (its RayJobs run)
or with its jobTemplate suspended (its RayJobs are created and start nothing: a schedule watched at no cost)."""
from __future__ import annotations

import copy

SAMPLE = "raycronjob-basic"


def schedule_only(body: dict) -> dict:
    """The RayCronJob with its jobTemplate suspended: its RayJobs are created and start nothing (no RayCluster)."""
    body = copy.deepcopy(body)
    body["spec"]["jobTemplate"]["suspend"] = True
    return body
