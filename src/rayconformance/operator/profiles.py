"""Operator profiles (profiles/*.yaml): what an operator is, how to install it, which features it claims and
which it lacks (no API for them).

`load(name_or_path)` validates a profile by hand against the shape documented in profiles/template.yaml and
returns a frozen `Profile`, its install sections typed (install_section.py); any problem is a `ProfileError` whose
message is one line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import re
from pathlib import Path

import yaml

from rayconformance import features, schemas

from .install_section import InstallSection, SectionError
from .install_section import check_own_manifests as check_section_manifests
from .install_section import parse as parse_section

PROFILES_DIR = Path(__file__).resolve().parents[3] / "profiles"  # the checkout's profiles/
SCHEMA = Path(__file__).resolve().parent / "profile.schema.json"  # what parse() checks last
API_VERSION = "rayconformance.io/v1alpha1"
KIND = "OperatorProfile"

TOP_KEYS = ("apiVersion", "kind", "name", "implementation", "install", "readiness", "featureGates", "rayVersions",
            "rayVersion", "operatorUpgradeFrom", "features", "lacks")
IMPLEMENTATION_KEYS = ("organization", "project", "url", "version", "contact")
READINESS_KEYS = ("deployment",)
DEPLOYMENT_KEYS = ("namespace", "name")
RAY_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
UPGRADE_FEATURE = "RayServiceOperatorUpgrade"  # needs operatorUpgradeFrom
SUBMITTER_FEATURE = "RayJobLightweightSubmitter"  # needs install.<provider>.submitterImage


class ProfileError(ValueError):
    """A profile is missing or malformed; the message says what and how to fix it."""


@dataclass(frozen=True)
class Readiness:
    namespace: str
    deployment: str


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    implementation: dict  # organization, project, url, version, contact (list)
    features: tuple[str, ...]
    install: dict[str, InstallSection] = field(default_factory=dict)  # provider -> how to install the operator
    readiness: Readiness | None = None
    feature_gates: dict = field(default_factory=dict)  # gate name -> bool
    ray_version: str | None = None  # the default Ray version: the first of ray_versions
    ray_versions: tuple[str, ...] = ()  # the Ray versions the operator supports (samples' images), default first
    # the profiles of the earlier releases a user upgrades this operator from (operatorUpgradeFrom), as given
    upgrade_from: tuple[str, ...] = ()
    # the features whose API the release does not have: --all-features leaves them out (reported unsupported)
    lacks: tuple[str, ...] = ()

    def __post_init__(self):
        if self.ray_version and not self.ray_versions:
            object.__setattr__(self, "ray_versions", (self.ray_version,))
        elif self.ray_versions and not self.ray_version:
            object.__setattr__(self, "ray_version", self.ray_versions[0])


def upgrade_source(profile_path: Path, name_or_path: str) -> Path:
    """Where a profile named in `operatorUpgradeFrom` of the profile at `profile_path` is: a name in profiles/,
    or a YAML path (relative to the naming profile's directory)."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        return p if p.is_absolute() else profile_path.parent / p
    return PROFILES_DIR / f"{name_or_path}.yaml"


def known() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def resolve(name_or_path: str) -> Path:
    from rayconformance.clusters.definition import resolve_named

    return resolve_named(name_or_path, PROFILES_DIR)


def load(name_or_path: str) -> Profile:
    path = resolve(name_or_path)
    if not path.is_file():
        raise ProfileError(f"operator profile '{name_or_path}' not found ({path}); profiles live in "
                           f"{PROFILES_DIR}, known: {', '.join(known())}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ProfileError(f"operator profile {path} is not valid YAML: {' '.join(str(e).split())}") from None
    return parse(raw, path)


def check_own_manifests(profile: Profile, provider: str) -> None:
    """The profile's install on `provider` from manifests of its own: each there and holding Kubernetes objects
    (install_section.check_own_manifests), checked as a run starts, before anything is built or brought up."""
    section = profile.install.get(provider)
    if section is None:
        return
    try:
        check_section_manifests(section, profile.path.parent, f"install.{provider}")
    except SectionError as e:
        raise ProfileError(f"operator profile {profile.path}: {e}") from None


def parse(raw, path: Path) -> Profile:
    def fail(msg: str):
        raise ProfileError(f"operator profile {path}: {msg}; see profiles/template.yaml")

    def mapping(value, where: str, allowed=None) -> dict:
        if not isinstance(value, dict):
            fail(f"'{where}' must be a mapping")
        extra = [k for k in value if allowed is not None and k not in allowed]
        if extra:
            fail(f"unknown key '{extra[0]}' in {where}; allowed keys: {', '.join(allowed)}")
        return value

    def string(value, where: str) -> str:
        if not isinstance(value, str) or not value:
            fail(f"'{where}' must be a non-empty string")
        return value

    raw = mapping(raw, "the top level", TOP_KEYS)
    for key in ("apiVersion", "kind", "name", "implementation", "features"):
        if key not in raw:
            fail(f"missing required key '{key}'")
    if raw["apiVersion"] != API_VERSION or raw["kind"] != KIND:
        fail(f"expected apiVersion: {API_VERSION} and kind: {KIND}")

    impl = mapping(raw["implementation"], "implementation", IMPLEMENTATION_KEYS)
    implementation = {k: string(impl.get(k), f"implementation.{k}") for k in IMPLEMENTATION_KEYS[:4]}
    contact = impl.get("contact", [])
    if not isinstance(contact, list) or not all(isinstance(c, str) for c in contact):
        fail("'implementation.contact' must be a list of strings")
    implementation["contact"] = list(contact)

    from rayconformance.providers import names as provider_names

    raw_install = mapping({} if raw.get("install") is None else raw["install"], "install", tuple(provider_names()))
    try:  # an empty section installs nothing, as a provider without one
        install = {provider: parse_section(how, f"install.{provider}") for provider, how in raw_install.items()
                   if how != {}}
    except SectionError as e:
        fail(str(e))

    readiness = None
    if raw.get("readiness") is not None:
        r = mapping(raw["readiness"], "readiness", READINESS_KEYS)
        d = mapping(r.get("deployment"), "readiness.deployment", DEPLOYMENT_KEYS)
        readiness = Readiness(string(d.get("namespace"), "readiness.deployment.namespace"),
                              string(d.get("name"), "readiness.deployment.name"))

    gates = mapping({} if raw.get("featureGates") is None else raw["featureGates"], "featureGates")
    bad_gate = next((k for k, v in gates.items() if not isinstance(v, bool)), None)
    if bad_gate is not None:
        fail(f"featureGates.{bad_gate} must be true or false")

    if raw.get("rayVersions") is not None and raw.get("rayVersion") is not None:
        fail("set 'rayVersions' (a list, default first) or the older 'rayVersion', not both")
    versions = raw.get("rayVersions")
    if versions is None:
        versions = [] if raw.get("rayVersion") is None else [raw["rayVersion"]]
        where = "rayVersion"
    else:
        where = "rayVersions"
        if not isinstance(versions, list) or not versions:
            fail("'rayVersions' must be a non-empty list of Ray versions, the default first")
    ray_versions = tuple(str(v) for v in versions)
    if bad := next((v for v in ray_versions if not RAY_VERSION.match(v)), None):
        fail(f"'{where}' has '{bad}', not a Ray release (MAJOR.MINOR.PATCH, quoted)")
    if len(set(ray_versions)) != len(ray_versions):
        fail(f"'{where}' names a Ray version twice")

    upgrade_from = raw.get("operatorUpgradeFrom")
    upgrade_from = [] if upgrade_from is None else [upgrade_from] if isinstance(upgrade_from, str) else upgrade_from
    if not isinstance(upgrade_from, list) or not all(isinstance(u, str) and u for u in upgrade_from):
        fail("'operatorUpgradeFrom' must be a profile name (or a list of them) of an earlier release")
    for u in upgrade_from:
        where = upgrade_source(path, u)
        if not where.is_file():
            fail(f"'operatorUpgradeFrom' names '{u}', which is no profile ({where} not found; known: "
                 f"{', '.join(known())})")
        if where.resolve() == path.resolve() or u == raw.get("name"):
            fail(f"'operatorUpgradeFrom' names '{u}', this profile itself; name an earlier release's profile")
    if len(set(upgrade_from)) != len(upgrade_from):
        fail("'operatorUpgradeFrom' names a profile twice")

    claimed = [] if raw["features"] is None else raw["features"]
    if not isinstance(claimed, list) or not all(isinstance(f, str) for f in claimed):
        fail("'features' must be a list of feature names")
    if bad := features.unknown(claimed):
        raise ProfileError(f"operator profile {path}: " + features.unknown_message(bad, "features"))
    lacks = [] if raw.get("lacks") is None else raw["lacks"]
    if not isinstance(lacks, list) or not all(isinstance(f, str) for f in lacks):
        fail("'lacks' must be a list of feature names")
    if bad := features.unknown(lacks):
        raise ProfileError(f"operator profile {path}: " + features.unknown_message(bad, "lacks"))
    if both := [f for f in lacks if f in claimed]:
        fail(f"it claims {both[0]}, which it also lists under 'lacks'; a release claims only what it has")
    if UPGRADE_FEATURE in claimed and not upgrade_from:
        fail(f"it claims {UPGRADE_FEATURE} but names no 'operatorUpgradeFrom' (the release it is upgraded from)")
    if SUBMITTER_FEATURE in claimed and (lacking := [p for p, how in install.items() if not how.submitter_image]):
        fail(f"it claims {SUBMITTER_FEATURE} but install.{lacking[0]} names no 'submitterImage' (the operator's "
             "light-weight RayJob submitter image)")

    if problem := schemas.problem(raw, schemas.load(SCHEMA)):
        fail(f"{problem} (the profile's schema: {SCHEMA.relative_to(SCHEMA.parents[3])})")
    return Profile(name=string(raw["name"], "name"), path=path, implementation=implementation,
                   features=tuple(claimed), install=install, readiness=readiness, feature_gates=dict(gates),
                   ray_version=ray_versions[0] if ray_versions else None, ray_versions=ray_versions,
                   upgrade_from=tuple(upgrade_from), lacks=tuple(lacks))
