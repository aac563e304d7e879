"""The conformance features (the one list), grouped by resource (RayCluster, RayJob, RayService, RayCronJob) and
level (Core, Extended), and how they select tests. (Gateway API's conformance calls such a group a profile; here
"profile" is only ever an operator profile, profiles/*.yaml.)

A test declares what it exercises with `@pytest.mark.feature("Name", ...)`. It runs only when every one
of its features is supported (claimed by the operator profile, or given by the options); otherwise it is
skipped and reported as unsupported; so is a feature whose `min_ray` is newer than the run's Ray version,
whatever claims it. Tests are addressed by their short name: the test function's name
without the `test_` prefix, plus the parameter id if it has one (`autoscaler[v2]`).

The list is kept one module per resource (raycluster.py, rayjob.py, rayservice.py, raycronjob.py), each feature a
value of model.py's `Feature`.
"""
from __future__ import annotations

from . import raycluster, raycronjob, rayjob, rayservice
from .model import LEVELS, RESOURCES, Feature

__all__ = ["FEATURES", "BY_NAME", "NAMES", "MARKER", "RESOURCES", "LEVELS", "Feature", "unknown", "unknown_message",
           "skip_reason", "short_name", "matches", "classify"]

FEATURES: tuple[Feature, ...] = (*raycluster.FEATURES, *rayjob.FEATURES, *rayservice.FEATURES, *raycronjob.FEATURES)
BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}
NAMES: tuple[str, ...] = tuple(BY_NAME)
MARKER = "feature"


def unknown(names) -> list[str]:
    return [n for n in names if n not in BY_NAME]


def unknown_message(names, where: str) -> str:
    return f"unknown feature(s) {', '.join(names)} in {where}; valid features: {', '.join(NAMES)}"


def skip_reason(test_features, supported, exempt, claimed_by: str, lacked=()) -> str | None:
    """Why a test needing `test_features` must be skipped, or None when it may run. `lacked`: features left out
    because the release lacks their API (only --all-features leaves them out for that reason)."""
    missing = [f for f in test_features if f not in supported]
    if not missing:
        return None
    exempted = [f for f in missing if f in exempt]
    why = ("exempted by --exempt-features" if exempted == missing
           else "the release lacks its API (the profile's lacks)" if any(f in lacked for f in missing)
           else f"not claimed by {claimed_by}")
    return f"unsupported feature(s): {', '.join(missing)} ({why})"


def short_name(item_name: str) -> str:
    """`test_autoscaler[v2]` -> `autoscaler[v2]`."""
    return item_name.removeprefix("test_")


def matches(name: str, short: str) -> bool:
    """A name given to --skip-tests/--run-test names one test, or all parametrizations of one function."""
    return name == short or name == short.split("[", 1)[0]


def classify(test_features) -> dict[str, str]:
    """Resource -> level for one test: it counts in every resource its features touch, and is extended
    within a resource when any of its features is extended."""
    feats = [BY_NAME[f] for f in test_features]
    extended = any(f.level == "extended" for f in feats)
    return {f.resource: "extended" if extended else "core" for f in feats}
