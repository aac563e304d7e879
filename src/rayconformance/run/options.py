"""The plugin's command-line options, and their validation (in one place) into a frozen `Options`.

Precedence: command line > options file (`--conformance-options-file`, YAML whose keys are the option
names without the leading dashes) > defaults. Any bad input raises `pytest.UsageError` with a one-line
message, which pytest prints as `ERROR: ...` without a traceback.
"""
from __future__ import annotations

import argparse
import json
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from rayconformance import features, providers, schemas
from rayconformance.clusters.definition import ClusterDefinition
from rayconformance.operator import profiles
from rayconformance.report import baseline, signing

from . import ray_versions, shards

if TYPE_CHECKING:
    from rayconformance.operator.source_tree import TreeKey

GROUP = "rayconformance"
OPTIONS_FILE = "conformance-options-file"
DIAGNOSTICS = ("evidence", "full", "failed")  # --diagnostics
PUBLISHED = "published"  # reports/published/: verified runs kept in git, not a run's directory
RUN_ID = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,38}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Opt:
    name: str  # the flag without `--`, also the key in the options file
    kind: str  # str | list | flag | float
    default: object
    help: str


OPTS = (
    Opt("provider", "str", None, "cluster provider: a module of src/rayconformance/providers, e.g. local, kind, "
                                 "existing (default: the --cluster definition's provider, else local)"),
    Opt("cluster", "str", None, "cluster definition name under clusters/ or a path (default: the provider's own, "
                                "e.g. local-gpu, kind-cpu; the existing provider takes none)"),
    Opt("attach-kubeconfig", "str", None, "use the cluster of the --cluster definition that is already up behind "
                                          "this kubeconfig (e.g. a local bed from `python -m "
                                          "rayconformance.clusters.local up`) and leave it up; local provider"),
    Opt("operator-profile", "str", "kuberay-v1.6.1", "operator profile name under profiles/ or a path "
                                                     "(default: kuberay-v1.6.1)"),
    Opt("operator-tree", "str", None, "a KubeRay source tree (a git clone) for a profile whose install source names a "
                                      "repository and ref, e.g. kuberay-v1.7.0 (default: $RAYCONF_OPERATOR_TREE)"),
    Opt("ray-version", "str", None, "the Ray version the samples use (rayproject/ray:<version>), one the profile "
                                    "names in rayVersions (default: its first)"),
    Opt("supported-features", "list", None, "comma list of features to test, instead of the profile's claims"),
    Opt("exempt-features", "list", (), "comma list of features not to test"),
    Opt("all-features", "flag", False, "test every feature the release has (all but the profile's `lacks`)"),
    Opt("core-only", "flag", False, "test Core features only (a quick gate), whatever else is claimed"),
    Opt("skip-tests", "list", (), "comma list of test short names to skip"),
    Opt("run-test", "list", (), "comma list of test short names: run only these, whatever the features"),
    Opt("timeout-scale", "float", 1.0, "multiply every timeout by this factor (default: 1)"),
    Opt("overload-threshold", "float", 4.0, "mark a failed test `environment: overloaded` when runnable tasks per "
                                            "core averaged at least this while it ran (default: 4)"),
    Opt("foreign-load-threshold", "float", 0.15, "mark a failed test `environment: overloaded` when processes that "
                                                 "are not the run's (or a hypervisor's steal) kept at least this "
                                                 "share of the cores busy while it ran (default: 0.15)"),
    Opt("baseline", "str", None, "an earlier run's report (file or reports/<run-id>): each test is compared "
                                 "with it (still-pass, regressed, fixed, ...), regressions named first"),
    Opt("fail-on", "str", "any", "what fails the run's exit status: any (a failed test) or regression (only a "
                                 "test that passed in --baseline and fails now)"),
    Opt("shard", "str", None, "run shard K of N (K/N): the selected tests split across N machines by the "
                              "durations of --durations-from (python -m rayconformance merge joins the reports)"),
    Opt("durations-from", "str", None, "an earlier report whose test durations order the run (longest first) "
                                       "and balance --shard (default: the --baseline report)"),
    Opt("report-dir", "str", "reports", "directory for run output (default: reports)"),
    Opt("run-id", "str", None, "name of this run's directory and label value (default: timestamp + random)"),
    Opt("keep-resources", "flag", False, "keep namespaces, the operator and the cluster after the run"),
    Opt("diagnostics", "str", "evidence", "each test's diagnostics: evidence (objects and events; a failed test's "
                                          "logs too), full (every test's logs too) or failed (failed tests only)"),
    Opt("mode", "str", "default", "the implementation's operating mode, as recorded in the report"),
    Opt("report-organization", "str", None, "override the profile's implementation.organization"),
    Opt("report-project", "str", None, "override the profile's implementation.project"),
    Opt("report-url", "str", None, "override the profile's implementation.url"),
    Opt("report-version", "str", None, "override the profile's implementation.version"),
    Opt("report-contact", "list", None, "override the profile's implementation.contact (comma list)"),
    Opt("sign-key", "str", None, "sign the run's report with this Ed25519 private key (PEM; `python -m "
                                 "rayconformance keygen DIR` makes one): conformance-report.yaml.sig beside it"),
)
WORKER_RUN_DIR = "rayconformance_run_dir"  # keys in xdist's workerinput
WORKER_CLUSTER = "rayconformance_cluster"  # the provider and resolved definition, as JSON
WORKER_DURATIONS = "rayconformance_durations"  # the report the controller's run is ordered by ("" for none)
# Test-only: "module:callable" used instead of rayconformance.providers.build (same signature).
PROVIDER_FACTORY = "provider-factory"


def default(name: str):
    """The default of option `name` (its row in OPTS)."""
    return next(o.default for o in OPTS if o.name == name)


def dest(name: str) -> str:
    return "rc_" + name.replace("-", "_")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "Ray operator conformance")
    group.addoption(f"--{OPTIONS_FILE}", dest=dest(OPTIONS_FILE), metavar="PATH",
                    help="YAML file of options (keys are option names); command-line options win")
    for o in OPTS:
        if o.kind == "flag":
            group.addoption(f"--{o.name}", dest=dest(o.name), action="store_true", default=None, help=o.help)
        else:
            group.addoption(f"--{o.name}", dest=dest(o.name), default=None, help=o.help)
    group.addoption(f"--{PROVIDER_FACTORY}", dest=dest(PROVIDER_FACTORY), help=argparse.SUPPRESS)


@dataclass(frozen=True)
class Options:
    provider: str
    definition: ClusterDefinition | None  # resolved once (the controller's, in xdist workers); None: takes none
    profile: profiles.Profile
    supported: frozenset[str]  # the features whose tests run
    exempt: frozenset[str]
    claimed_by: str  # who decided `supported`, for skip reasons: "profile <name>" or the option
    lacked: frozenset[str]  # left out of --all-features because the release lacks their API (profile's `lacks`)
    skip_tests: tuple[str, ...]
    core_only: bool
    run_test: tuple[str, ...]
    timeout_scale: float
    overload_threshold: float
    foreign_load_threshold: float
    baseline: tuple[str, str, dict] | None  # (its run id, the path given, test name -> outcome)
    fail_on: str
    shard: tuple[int, int] | None  # (K, N)
    durations: dict  # test short name -> seconds, from --durations-from, --baseline or an earlier report
    report_dir: Path
    run_id: str
    keep_resources: bool
    mode: str
    implementation: dict  # the profile's implementation block with the --report-* overrides applied
    ray_version: str | None = None  # --ray-version, else the profile's default (None: the profile names none)
    operator_tree: str | None = None  # --operator-tree, else $RAYCONF_OPERATOR_TREE (operator/source_tree.py)
    operator_tree_key: TreeKey | None = None  # its source_tree.TreeKey (commit, uncommitted changes), read once at start
    provider_factory: str | None = None
    attach_kubeconfig: Path | None = None  # a cluster already up, used and left up
    provider_reason: str = ""  # why this provider: the option that named it, or what the machine offers
    durations_from: str | None = None  # the report `durations` come from
    sign_key: Path | None = None  # --sign-key, checked to be a usable key (the controller's; None in xdist workers)
    diagnostics: str = "evidence"  # one of DIAGNOSTICS: whose namespace diagnostics are kept, and with logs or not

    @property
    def order(self) -> str:
        """How the tests are ordered, for the run's first lines and the report."""
        if not self.durations:
            return "in collection order (no earlier test durations)"
        return f"longest first by the test durations in {self.durations_from}"

    @property
    def cluster_name(self) -> str:
        return self.definition.name if self.definition else "-"

    @property
    def run_dir(self) -> Path:
        return self.report_dir / self.run_id


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def read_file(path: str | None) -> dict:
    if not path:
        return {}
    p = Path(path)
    if not p.is_file():
        raise pytest.UsageError(f"options file {p} not found; pass an existing YAML file to --{OPTIONS_FILE}")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise pytest.UsageError(f"options file {p} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise pytest.UsageError(f"options file {p} must be a mapping of option name to value")
    allowed = [o.name for o in OPTS]
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise pytest.UsageError(f"unknown key '{unknown[0]}' in options file {p}; allowed keys: {', '.join(allowed)}")
    if problem := schemas.problem(data, options_file_schema()):
        raise pytest.UsageError(f"options file {p}: {problem} (its schema: python -m rayconformance schema options)")
    return data


def options_file_schema() -> dict:
    """The JSON Schema of an options file (--conformance-options-file): each option by its kind."""
    kinds = {"str": {"type": ["string", "number", "null"]}, "flag": {"type": ["boolean", "null"]},  # null: the default
             "float": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": ["string", "null"]}]},
             "list": {"anyOf": [{"type": ["string", "null"]},
                                {"type": "array", "items": {"type": ["string", "number"]}}]}}
    properties = {o.name: {**kinds[o.kind], "description": o.help} for o in OPTS}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "rayconformance options file",
            "type": "object", "additionalProperties": False, "properties": properties}


def _value(o: Opt, cli, from_file):
    """The effective raw value of one option, normalised by kind."""
    value = cli if cli is not None else from_file if from_file is not None else o.default
    if value is None:
        return None
    if o.kind == "list":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise pytest.UsageError(f"--{o.name} must be a comma list (or a YAML list in the options file)")
        return tuple(s for s in (str(i).strip() for i in items) if s)
    if o.kind == "flag":
        if not isinstance(value, bool):
            raise pytest.UsageError(f"{o.name} must be true or false in the options file")
        return value
    if o.kind == "float":
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not number > 0:
            raise pytest.UsageError(f"--{o.name} must be a number > 0, got '{value}'")
        return number
    return str(value)


def check_ray_version(wanted: str | None, profile: profiles.Profile) -> str | None:
    """--ray-version if the profile supports it (any release when the profile names none), else its default."""
    if wanted is None:
        return profile.ray_version
    if not profiles.RAY_VERSION.match(wanted):
        raise pytest.UsageError(f"--ray-version '{wanted}' is not a Ray release (MAJOR.MINOR.PATCH, e.g. 2.60.0)")
    if profile.ray_versions and wanted not in profile.ray_versions:
        raise pytest.UsageError(f"--ray-version {wanted} is not supported by operator profile {profile.name}; "
                                f"it supports Ray {', '.join(profile.ray_versions)} (rayVersions in {profile.path})")
    return wanted


def check_operator_tree(option: str | None, profile: profiles.Profile, provider: str,
                        collect_only: bool) -> TreeKey | None:
    """The key (source_tree.TreeKey) of the source tree the profile's install on `provider` builds (--operator-tree,
    else RAYCONF_OPERATOR_TREE), or None when it installs a release; a profile that needs a tree and has none is a
    one-line error (except when only collecting)."""
    from rayconformance.operator import source_tree

    try:
        key = source_tree.require_tree(profile, provider, option)
    except source_tree.SourceTreeError as e:
        if collect_only:
            return None
        raise pytest.UsageError(str(e)) from None
    return key


def resolve_cluster(v: dict, workerinput: dict | None) -> tuple[str, ClusterDefinition | None]:
    """The provider and its cluster definition: read and checked once, by the controller; an xdist worker takes
    the controller's resolved value (`encode_cluster`) and reads no definition."""
    if workerinput and WORKER_CLUSTER in workerinput:
        data = json.loads(workerinput[WORKER_CLUSTER])
        return data["provider"], data["definition"] and ClusterDefinition.from_dict(data["definition"])
    try:
        return providers.resolve(v["provider"], v["cluster"])
    except providers.ProviderError as e:
        raise pytest.UsageError(str(e)) from None


def encode_cluster(options: Options) -> str:
    """What an xdist worker gets of `resolve_cluster`."""
    return json.dumps({"provider": options.provider,
                       "definition": options.definition.to_dict() if options.definition else None})


def check_attach(value: str | None, provider: str, base: Path) -> Path | None:
    if value is None:
        return None
    path = base / value
    if not path.is_file():
        raise pytest.UsageError(f"--attach-kubeconfig {value}: no such file; pass the kubeconfig of a cluster that "
                                "is up (`python -m rayconformance.clusters.local up` prints it)")
    if not providers.provider_class(provider).adoptable:
        raise pytest.UsageError(f"--attach-kubeconfig: provider {provider} cannot attach to a cluster that is already "
                                "up; use it with --provider local (or leave it out)")
    return path


def check_sign_key(value: str | None, base: Path, workerinput: dict | None) -> Path | None:
    """--sign-key as a path, once its key loads (before anything is built); xdist workers sign nothing."""
    if value is None or workerinput:
        return None
    path = base / value
    try:
        signing.load_private(path)
    except signing.SigningError as e:
        raise pytest.UsageError(str(e)) from None
    return path


def durations_source(v: dict, report_dir: Path, workerinput: dict | None) -> str | None:
    """--durations-from, else --baseline, else (unsharded: every shard must read the same one) the earlier report
    `shards.earlier_report` picks in the report directory, else the profile's published run; an xdist worker takes
    the controller's."""
    if workerinput and WORKER_DURATIONS in workerinput:
        return workerinput[WORKER_DURATIONS] or None
    if v["durations-from"] or v["baseline"] or v["shard"]:
        return v["durations-from"] or v["baseline"]
    found = shards.earlier_report(report_dir, v["cluster"], v["operator-profile"])
    if found is None:
        return None
    try:
        shards.durations(str(found))
    except pytest.UsageError:  # a report nobody named, which durations() cannot read: collection order
        return None
    try:  # as the report records it: relative to where the run started when under it (no machine's path)
        return str(found.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(found)


def load(config: pytest.Config) -> Options:
    from_file = read_file(config.getoption(dest(OPTIONS_FILE)))
    v = {o.name: _value(o, config.getoption(dest(o.name)), from_file.get(o.name)) for o in OPTS}

    workerinput = getattr(config, "workerinput", None)
    why = f"--provider {v['provider']}" if v["provider"] else f"--cluster {v['cluster']}" if v["cluster"] else ""
    if not why and v["attach-kubeconfig"]:  # only a local bed is attached to, whatever engine answers
        v["provider"], why = "local", "--attach-kubeconfig: a local bed that is up"
    if not why and not workerinput and not config.getoption(dest(PROVIDER_FACTORY)):
        v["provider"], why = providers.default_provider()
    provider, definition = resolve_cluster(v, workerinput)
    attach = check_attach(v["attach-kubeconfig"], provider, config.invocation_params.dir)
    sign_key = check_sign_key(v["sign-key"], config.invocation_params.dir, workerinput)
    for name in ("supported-features", "exempt-features"):
        if bad := features.unknown(v[name] or ()):
            raise pytest.UsageError(features.unknown_message(bad, f"--{name}"))
    try:
        profile = profiles.load(v["operator-profile"])
        if not workerinput and not config.option.collectonly:
            profiles.check_own_manifests(profile, provider)
    except profiles.ProfileError as e:
        raise pytest.UsageError(str(e)) from None

    ray_version = check_ray_version(v["ray-version"], profile)
    tree_key = check_operator_tree(v["operator-tree"], profile, provider, config.option.collectonly)

    report_dir = config.invocation_params.dir / v["report-dir"]
    if v["diagnostics"] not in DIAGNOSTICS:
        raise pytest.UsageError(f"--diagnostics {v['diagnostics']}: use one of {', '.join(DIAGNOSTICS)}")
    if v["fail-on"] not in baseline.FAIL_ON:
        raise pytest.UsageError(f"--fail-on {v['fail-on']}: use one of {', '.join(baseline.FAIL_ON)}")
    if v["fail-on"] == "regression" and not v["baseline"]:
        raise pytest.UsageError("--fail-on regression needs --baseline REPORT (the run to compare with)")
    base = None
    if v["baseline"]:
        base_id, outcomes = baseline.load(v["baseline"])
        base = (base_id, v["baseline"], outcomes)
    durations_from = durations_source(v, report_dir, workerinput)
    run_id = v["run-id"] or new_run_id()
    if workerinput and WORKER_RUN_DIR in workerinput:  # an xdist worker uses the controller's run directory
        run_dir = Path(workerinput[WORKER_RUN_DIR])
        report_dir, run_id = run_dir.parent, run_dir.name
    if not RUN_ID.match(run_id):
        raise pytest.UsageError(f"--run-id '{run_id}' is not usable; use up to 40 letters, digits, '-', '_' or '.', "
                                "starting and ending with a letter or digit")
    if run_id == PUBLISHED:
        raise pytest.UsageError(f"--run-id {PUBLISHED}: reports/{PUBLISHED}/ holds published runs (reports/README.md); "
                                "pick another run id")

    lacked = frozenset(profile.lacks) if v["all-features"] else frozenset()
    if v["all-features"]:
        supported, claimed_by = set(features.NAMES) - lacked, "--all-features"
    elif v["supported-features"] is not None:
        supported, claimed_by = set(v["supported-features"]), "--supported-features"
    else:
        supported, claimed_by = set(profile.features), f"profile {profile.name}"
    exempt = frozenset(v["exempt-features"])
    supported -= set(ray_versions.ray_too_old(supported, ray_version))  # reported unsupported at this Ray version

    overrides = {k: v[f"report-{k}"] for k in ("organization", "project", "url", "version", "contact")}
    implementation = {**profile.implementation, **{k: x if k != "contact" else list(x)
                                                   for k, x in overrides.items() if x is not None}}
    return Options(
        provider=provider, definition=definition, profile=profile, supported=frozenset(supported - exempt),
        exempt=exempt, claimed_by=claimed_by, lacked=lacked, skip_tests=v["skip-tests"], core_only=v["core-only"],
        run_test=v["run-test"],
        timeout_scale=v["timeout-scale"], overload_threshold=v["overload-threshold"],
        foreign_load_threshold=v["foreign-load-threshold"],
        baseline=base, fail_on=v["fail-on"], shard=shards.parse(v["shard"]),
        durations=shards.durations(durations_from), report_dir=report_dir, run_id=run_id,
        keep_resources=v["keep-resources"], mode=v["mode"], implementation=implementation, ray_version=ray_version,
        operator_tree=str(tree_key.tree) if tree_key else None, operator_tree_key=tree_key,
        provider_factory=config.getoption(dest(PROVIDER_FACTORY)), attach_kubeconfig=attach,
        provider_reason=why, durations_from=durations_from, sign_key=sign_key, diagnostics=v["diagnostics"],
    )

