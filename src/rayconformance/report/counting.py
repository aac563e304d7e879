"""How a report counts its tests, as Gateway API's conformance reports do: per resource (RayCluster, RayJob,
RayService: what Gateway API calls a profile) and level the tests of the features the operator claims (passed,
failed, skipped) and, apart from them, the tests of features it does not claim. The blocks per resource are the
report's `resources` (`profiles` in reports made before "profile" meant only an operator profile: `resource_blocks`).

A test skipped because one of its features is not claimed (not in the operator profile, exempted, needing a newer
Ray, the release lacking its API) is `unsupported`: it says nothing of the operator's verdict, so it is no skip. A
level's result is `failure` when a test failed, `partial` when a test of claimed features was skipped (a run that
could not test a claim: --skip-tests, a cluster without the GPU the test needs), `success` when tests passed and none
failed or was skipped, and `untested` when no test of a claimed feature ran (a resource the operator claims nothing
of).

Statistics schemes (`certification.statisticsScheme`; a report without it is of scheme 1): 1 counted unsupported
tests as skipped (a level with none passed was `partial`); 2 counts them apart. `verify` re-derives a report's
statistics by the scheme it names.
"""
from __future__ import annotations

from types import ModuleType

from rayconformance import features

SCHEME = 2  # what a run records
SCHEMES = (1, 2)
OUTCOMES = ("passed", "failed", "skipped")
UNSUPPORTED = "unsupported"
RESOURCES_KEY = "resources"  # the report's blocks per resource
OLD_RESOURCES_KEY = "profiles"  # what reports named them before "profile" meant only an operator profile


def unsupported(test, claimed) -> bool:
    """A test (a Record, or a report's test entry) skipped for a feature that is not claimed."""
    outcome, names = (test["outcome"], test["features"]) if isinstance(test, dict) else (test.outcome, test.features)
    return outcome == "skipped" and not set(claimed).issuperset(names)


def verdict(test, claimed) -> str:
    """passed, failed, skipped or unsupported."""
    return UNSUPPORTED if unsupported(test, claimed) else test["outcome"] if isinstance(test, dict) else test.outcome


def status(tests: list, resource: str | None = None, table: ModuleType = features, claimed=None,
           scheme: int = SCHEME) -> dict:
    """One level's block: its result, counts and the tests and features that did not pass. `claimed` (the report's
    claimedFeatures) sets unsupported tests apart under scheme 2."""
    apart = scheme >= 2 and claimed is not None
    kinds = OUTCOMES + ((UNSUPPORTED,) if apart else ())
    by = {k: sorted(t.name for t in tests if (verdict(t, claimed) if apart else t.outcome) == k) for k in kinds}
    if by["failed"]:
        result = "failure"
    elif by["skipped"]:
        result = "partial"
    elif by["passed"]:
        result = "success"
    else:  # scheme 1: nothing shown to work is partial
        result = "untested" if apart else "partial"
    failed_features = sorted({f for t in tests if t.outcome == "failed" for f in t.features
                              if resource is None or table.BY_NAME[f].resource == resource})
    return {"result": result, "statistics": {k: len(names) for k, names in by.items()},
            "failedTests": by["failed"], "failedFeatures": failed_features, "skippedTests": by["skipped"],
            **({"unsupportedTests": by[UNSUPPORTED]} if apart else {})}


def summary(level: str, st: dict) -> str:
    """The sentence for one level, as Gateway API's summaries go; the unsupported tests after it (scheme 2)."""
    n = st["statistics"]
    if st["result"] == "success":
        text = f"{level} tests succeeded."
    elif st["result"] == "failure":
        text = f"{level} tests failed with {n['failed']} test failure(s)."
    elif st["result"] == "untested":
        text = f"{level}: no test of a claimed feature ran."
    elif n["skipped"]:
        text = f"{level} tests partially succeeded with {n['skipped']} test skip(s)."
    else:
        text = f"{level}: no tests ran."
    if n.get(UNSUPPORTED):
        text += f" {n[UNSUPPORTED]} test(s) of unsupported features not run."
    return text


def resource_reports(tests: list, supported, table: ModuleType = features, scheme: int = SCHEME) -> list[dict]:
    """One block per resource (the report's `resources`); `table` is the feature list (rayconformance.features, or an
    earlier suite's for verify), `supported` the claimed features, `scheme` the statistics scheme to count by."""
    out = []
    for resource in table.RESOURCES:
        levels = {"core": [], "extended": []}
        for t in tests:
            level = table.classify(t.features).get(resource)
            if level:
                levels[level].append(t)
        core, extended = (status(levels[lv], resource, table, supported, scheme) for lv in ("core", "extended"))
        ext_features = [f.name for f in table.FEATURES if f.resource == resource and f.level == "extended"]
        extended["supportedFeatures"] = [f for f in ext_features if f in supported]
        extended["unsupportedFeatures"] = [f for f in ext_features if f not in supported]
        out.append({"name": resource, "summary": f"{summary('Core', core)} {summary('Extended', extended)}",
                    "core": core, "extended": extended})
    return out


def resource_blocks(report: dict) -> list[dict]:
    """A report's blocks per resource: `resources`, or `profiles` in a report made before they were renamed."""
    blocks = report.get(RESOURCES_KEY, report.get(OLD_RESOURCES_KEY))
    return blocks if isinstance(blocks, list) else []


def scheme_of(report: dict) -> int:
    """The statistics scheme a report was counted by."""
    return (report.get("certification") or {}).get("statisticsScheme", 1)


def feature_verdicts(report: dict, table: ModuleType = features) -> dict[str, dict]:
    """Per feature a test of the report names (in the feature list's order): whether it is claimed, its verdict
    (failed, skipped, passed or unsupported: the worst of its claimed tests'; unsupported when none ran) and its
    tests by verdict."""
    claimed = set((report.get("operator") or {}).get("claimedFeatures") or [])
    out: dict[str, dict] = {}
    for t in report.get("tests") or []:
        for f in t["features"]:
            entry = out.setdefault(f, {"claimed": f in claimed, "tests": {}})
            entry["tests"].setdefault(verdict(t, claimed), []).append(t["name"])
    for entry in out.values():
        entry["verdict"] = next((v for v in ("failed", "skipped", "passed") if v in entry["tests"]), UNSUPPORTED)
    order = {n: i for i, n in enumerate(getattr(table, "NAMES", ()))}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
