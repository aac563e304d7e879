"""What makes a report checkable: digests of what ran, recorded in the report, and `verify`.

A report records the suite's digest (everything that decides a verdict: the conformance tests, the samples, the
framework code they run, fixtures/, src/ and clusters/, and the cluster definitions with the pinned versions of what
the beds run; `SCHEMES`), the digest of the operator profile that ran, and
a checksum of its results (each test's name, features and outcome). `verify` checks a submitted report directory
against a suite (this checkout, or the files of an earlier suite commit, `root`): the schema; the suite digest, by
the digest scheme the report names (the same suite ran); the profile digest, when the profile it names is in that
suite's profiles/; the results checksum (no outcome edited after the run: a checksum, not a signature); every
statistic the report states agrees with its test list, counted by the report's statistics scheme (tallies.py,
counting.py: an outcome edited and re-checksummed leaves them behind); the implementation block filled; every claimed
feature tested, none skipped or failed; and every Core test of each resource the operator claims features of ran and
passed; first of all, a signature the run has (signing.py). Each problem is one line. A gate's run (verify --gate) is
checked without the claims: gate_findings.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import yaml

from rayconformance import features

from . import counting, signing, tallies
from .results import FILENAME, SCHEMA

ROOT = Path(__file__).resolve().parents[3]  # the checkout
# certification.digestScheme -> what the suite digest covers (a directory and its glob patterns); a report without
# digestScheme is of scheme 1
SCHEMES = {1: (("conformance", "**/*.py"), ("samples", "**/*.yaml")),
           2: (("conformance", "**/*.py"), ("samples", "**/*.yaml"), ("fixtures", "**/*.py"), ("clusters", "**/*.py")),
           # the framework moved out of fixtures/ into src/rayconformance/ (issue 53): scheme 2 would leave it out
           3: (("conformance", "**/*.py"), ("samples", "**/*.yaml"), ("fixtures", "**/*.py"), ("clusters", "**/*.py"),
               ("src", "**/*.py")),
           # the Ray programs the tests run as Ray jobs moved out of the test modules into samples/programs/*.py
           4: (("conformance", "**/*.py"), ("samples", ("**/*.yaml", "programs/*.py")), ("fixtures", "**/*.py"),
               ("clusters", "**/*.py"), ("src", "**/*.py")),
           # the cluster definitions and the pinned versions of what the beds run (Kubernetes, etcd, kind, Helm, Ray's
           # dependencies: clusters/local/versions.env, ray-constraints.txt) and the scripts and files that build them
           5: (("conformance", "**/*.py"), ("samples", ("**/*.yaml", "programs/*.py")), ("fixtures", "**/*.py"),
               ("clusters", ("**/*.py", "**/*.yaml", "**/*.sh", "**/*.env", "**/*.txt", "**/*.c", "**/*.conf")),
               ("src", "**/*.py"))}
SCHEME = 5  # what a run records
SUITE_PARTS = SCHEMES[SCHEME]
# read from an earlier suite, where its commit keeps them: since the framework left fixtures/, and before
FEATURES_FILES = ("src/rayconformance/features/__init__.py", "src/rayconformance/features.py", "fixtures/features.py")
CERTIFY_FILES = ("src/rayconformance/report/certify.py", "fixtures/certify.py")
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
IMPLEMENTATION_KEYS = ("organization", "project", "url", "version", "contact")
UNTESTED_NAMED = 5  # claimed features without a test named one line each; more are one line


def file_digest(paths: list[Path], root: Path) -> str:
    """One sha256 over the files' paths (relative to `root`) and contents, in path order."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def suite_digest(root: Path = ROOT, scheme: int = SCHEME) -> str:
    return file_digest([p for d, patterns in SCHEMES[scheme]
                        for pattern in ((patterns,) if isinstance(patterns, str) else patterns)
                        for p in (root / d).glob(pattern) if "__pycache__" not in p.parts], root)


def scheme_of(report: dict) -> int:
    return (report.get("certification") or {}).get("digestScheme", 1)


def recorded_scheme(root: Path, otherwise: int) -> int:
    """The digest scheme the runs of the suite at `root` record (its certify.py, `CERTIFY_FILES`; before schemes,
    1), so that a report cannot name an older, narrower one; `otherwise` when `root` holds no certify.py."""
    if root.resolve() == ROOT:
        return SCHEME
    path = suite_file(root, CERTIFY_FILES)
    if path is None:
        return otherwise
    text = path.read_text()
    m = re.search(r"^SCHEME = ([0-9]+)", text, re.MULTILINE)
    return int(m.group(1)) if m else 1


def suite_file(root: Path, candidates: tuple[str, ...]) -> Path | None:
    """The first of `candidates` (paths in a suite, newest layout first) that the suite at `root` has."""
    return next((root / c for c in candidates if (root / c).is_file()), None)


def profile_digest(path: Path) -> str:
    return file_digest([path], path.parent)


def results_checksum(tests: list[dict]) -> str:
    rows = sorted((t["name"], t["nodeid"], sorted(t["features"]), t["outcome"]) for t in tests)
    return "sha256:" + hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def seal(report: dict, profile_path: Path | None, suite: dict | None = None) -> None:
    """Add the `certification` block to a report: last, over its final tests. `suite` is `identity()` as taken
    when the run started (the tests and samples that ran, though the checkout may have changed since)."""
    report["certification"] = certification(report["tests"], profile_path, suite)


def identity(profile_path: Path | None) -> dict:
    """The digests of the suite and the profile as they are now: taken when a run starts."""
    return {"suiteDigest": suite_digest(), "digestScheme": SCHEME,
            **({"profileDigest": profile_digest(profile_path)} if profile_path else {})}


def certification(tests: list[dict], profile_path: Path | None, suite: dict | None = None) -> dict:
    """The report's `certification` block."""
    ident = suite or identity(profile_path)
    return {"suiteDigest": ident["suiteDigest"], "digestScheme": ident.get("digestScheme", SCHEME),
            "statisticsScheme": counting.SCHEME, "resultsChecksum": results_checksum(tests),
            **({"profileDigest": ident["profileDigest"]} if "profileDigest" in ident else {})}


def verify(run_dir: Path, root: Path = ROOT, claims: bool = True, key=None, key_name: str = "--key") -> list[str]:
    """The problems of the report in `run_dir`, one line each; empty when it verifies. Without `claims`, only that
    the report is intact and made by this suite (a gate's check: gate_findings). A signature (signing.py) is checked
    first: by `key` (an Ed25519 public key, named `key_name`) when given, else by the key it names when there is
    one; a broken one is the only problem named."""
    path = run_dir / FILENAME
    if (run_dir / FILENAME).is_file() and (signed := signing.problem(run_dir, key, key_name)):
        return [signed]
    try:
        report = yaml.safe_load(path.read_text())
    except OSError:
        return [f"no report at {path}: give the directory a run wrote (reports/<run-id>)"]
    except yaml.YAMLError as e:
        return [f"{path} is not valid YAML: {' '.join(str(e).split())[:200]}"]
    problems = schema_problems(report)
    if problems:
        return problems
    cert, tests, scheme = report.get("certification") or {}, report["tests"], scheme_of(report)
    if scheme not in SCHEMES:
        return [f"digest scheme {scheme!r} is not one this suite knows ({', '.join(map(str, SCHEMES))}): verify the "
                f"report with the suite that made it (suite {report.get('suiteVersion')})"]
    if scheme != recorded_scheme(root, scheme):
        return [f"digest scheme {scheme} is not this suite's {recorded_scheme(root, scheme)} (the one its runs "
                f"record): the report was made by another suite (suite {report.get('suiteVersion')}), or its scheme "
                "was changed after the run"]
    if counting.scheme_of(report) not in counting.SCHEMES:
        return [f"statistics scheme {counting.scheme_of(report)!r} is not one this suite knows "
                f"({', '.join(map(str, counting.SCHEMES))}): verify the report with the suite that made it (suite "
                f"{report.get('suiteVersion')})"]
    if cert.get("suiteDigest") != suite_digest(root, scheme):
        problems.append(f"suite digest {cert.get('suiteDigest')} is not this suite's {suite_digest(root, scheme)}: "
                        "the report was made by other conformance tests, samples, framework code or test beds (suite "
                        f"{report.get('suiteVersion')})")
    if profile := profile_problem(report, root):
        problems.append(profile)
    table = feature_table(root)
    if cert.get("resultsChecksum") != results_checksum(tests):
        edited = "results checksum does not match the tests' outcomes: the report was changed after the run"
    elif mismatch := tallies.first_mismatch(report, table):
        edited = f"statistics do not match the tests ({mismatch}): the report was changed after the run"
    else:
        edited = None
    if edited:
        problems.append(edited)
    missing = [k for k in IMPLEMENTATION_KEYS if not (report.get("implementation") or {}).get(k)]
    if missing:
        problems.append(f"implementation block incomplete: {', '.join(missing)} missing")
    if claims and not edited:  # edited outcomes say nothing about the claims: the edit is the one problem to name
        problems += claim_problems(report, table)
    return problems


def gate_findings(report: dict) -> tuple[list[str], list[str]]:
    """What a gate's report (e.g. a kind run's, whose cluster offers no TPU) fails on, and what it leaves
    uncertified: (a failed test, or with a baseline a regression, one line each; the claim problems, which a gate
    does not fail on)."""
    block = report.get("baseline")
    if block:
        failing = [f"regressed against baseline {block['runId']}: {t}" for t in block.get("regressed") or []]
    else:
        failing = [f"test {t['name']} failed" for t in report["tests"] if t["outcome"] == "failed"]
    return failing, [f"not certified: {p}" for p in claim_problems(report)]


def profile_path(report: dict, root: Path) -> Path | None:
    """The suite's file of the profile the report names, if the suite has it."""
    name = str((report.get("operator") or {}).get("profile") or "")
    path = root / "profiles" / f"{name}.yaml"
    return path if PROFILE_NAME.match(name) and path.is_file() else None


def profile_problem(report: dict, root: Path) -> str | None:
    recorded, path = (report.get("certification") or {}).get("profileDigest"), profile_path(report, root)
    if recorded is None or path is None or recorded == profile_digest(path):
        return None
    return (f"profile digest {recorded} is not this suite's {profile_digest(path)} for profiles/{path.name}: the run "
            "used another profile of that name, or a changed one")


def digests_match(report: dict, root: Path) -> bool:
    """The suite at `root` is the one that made the report (suite and profile digests), by the report's scheme."""
    cert, scheme = report.get("certification") or {}, scheme_of(report)
    return (scheme in SCHEMES and scheme == recorded_scheme(root, scheme)
            and cert.get("suiteDigest") == suite_digest(root, scheme) and profile_problem(report, root) is None)


def feature_table(root: Path) -> ModuleType | SimpleNamespace:
    """The feature list of the suite at `root`: its features.py (`FEATURES_FILES`: an earlier commit's, written out
    by publish.suite_at; one whose groups were still named profiles read as resources), else this checkout's."""
    path = suite_file(root, FEATURES_FILES)
    if root.resolve() == ROOT or path is None:
        return features
    name = "rayconformance_suite_features"
    package = [str(path.parent)] if path.name == "__init__.py" else None  # a list kept one module per resource
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=package)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - an earlier features.py this checkout cannot load: its own list stands in
        return features
    finally:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
    if all(hasattr(module, n) for n in ("RESOURCES", "FEATURES", "BY_NAME", "classify")):
        return module
    if all(hasattr(module, n) for n in ("PROFILES", "FEATURES", "classify")):  # before the groups were resources
        return _as_resources(module)
    return features


def _as_resources(module: ModuleType) -> SimpleNamespace:
    """An earlier feature list whose groups were named profiles (`PROFILES`, `Feature.profile`), as this suite reads
    a feature list: `RESOURCES`, and features with their `resource`."""
    listed = tuple(features.Feature(f.name, f.profile, f.level, f.description, getattr(f, "min_ray", None))
                   for f in module.FEATURES)
    return SimpleNamespace(RESOURCES=module.PROFILES, FEATURES=listed, BY_NAME={f.name: f for f in listed},
                           NAMES=tuple(f.name for f in listed), classify=module.classify)


def schema_problems(report) -> list[str]:
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(report), key=lambda e: list(e.path))
    return [f"schema: {'/'.join(map(str, e.path)) or 'report'}: {e.message[:200]}" for e in errors[:5]]


def claim_problems(report: dict, table: ModuleType = features) -> list[str]:
    """Every claimed feature tested, none skipped or failed; every Core test of each claimed resource passed."""
    claimed = set(report["operator"].get("claimedFeatures") or [])
    by_feature: dict[str, list[dict]] = {}
    for t in report["tests"]:
        if counting.unsupported(t, claimed):
            continue  # skipped for a feature the operator does not claim (e.g. suspend during an upgrade)
        for f in t["features"]:
            by_feature.setdefault(f, []).append(t)
    problems, untested = [], [f for f in sorted(claimed) if f not in by_feature]
    if len(untested) > UNTESTED_NAMED:  # a narrowed selection: one line, not one per feature
        narrowed = (report.get("selection") or {}).get("narrowedBy") or []
        problems.append(f"{len(untested)} claimed features have no test in the report"
                        + (f" (the selection was narrowed by {', '.join(narrowed)})" if narrowed else "")
                        + f": {', '.join(untested[:UNTESTED_NAMED])}, ...")
    else:
        problems += [f"claimed feature {f} has no test in the report" for f in untested]
    for f in sorted(claimed):
        outcomes = {t["outcome"] for t in by_feature.get(f, [])}
        for outcome in ("skipped", "failed"):
            if outcome in outcomes:
                problems.append(f"claimed feature {f} {outcome} in "
                                f"{', '.join(t['name'] for t in by_feature[f] if t['outcome'] == outcome)}")
    claimed_resources = {table.BY_NAME[f].resource for f in claimed if f in table.BY_NAME}
    for t in report["tests"]:
        core = [r for r, level in table.classify(t["features"]).items() if level == "core" and r in claimed_resources]
        if core and t["outcome"] != "passed":
            problems.append(f"Core test {t['name']} of resource {core[0]} {t['outcome']}")
    return problems
