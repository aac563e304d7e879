"""A profile's `install.<provider>` section, typed: read when the profile loads (profiles.py), so that a wrong key or
value stops a run before anything is brought up, in one line naming it (profiles/template.yaml documents the keys).

`InstallSection` says where the operator's manifests or chart come from (`source`: a KubeRay release built into
the tool cache, optionally patched, or a source tree the user gives; `helm`: its chart), where it runs (namespace,
Deployment, container), what runs (the image, args, env, the RayJob submitter image of the same build) and how long
it may take to become ready. Which image an install runs is worked out here alone (`built_image`): the profile's
image, a patched release's build under the build's tag, or a source tree's build under the tree's.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

INSTALL_KEYS = ("source", "manifests", "helm", "namespace", "deployment", "container", "image", "args", "env",
                "readyTimeoutSeconds", "submitterImage")
RELEASE_SOURCE_KEYS = ("name", "version", "patch")  # a KubeRay release's module, built into the tool cache
TREE_SOURCE_KEYS = ("name", "repository", "ref")  # a source tree given by --operator-tree
HELM_KEYS = ("chart", "repository", "version", "release", "values", "crds")
CRD_MODES = ("apply", "helm", "skip")
DEFAULT_NAMESPACE = "ray-system"
READY_TIMEOUT = 300.0  # seconds, before --timeout-scale
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*:[\w][\w.-]*$")  # repository:tag
# where a source tree's build runs as its own image (the local bed maps the tag to the build, kind loads an image
# made from it); elsewhere (`existing`) the profile's published image runs
TREE_BUILD_PROVIDERS = ("local", "kind")


class SectionError(ValueError):
    """An install section that cannot be used; the message is one line naming the key (`install.<provider>...`)."""


@dataclass(frozen=True)
class Source:
    """What the operator is built from: a release (`version`, optionally with a `patch` relative to the profile) or
    a source tree (`repository` and `ref`: the tree itself is given by the user)."""
    name: str
    version: str | None = None
    patch: str | None = None
    repository: str | None = None
    ref: str | None = None

    @property
    def is_tree(self) -> bool:
        return self.repository is not None


@dataclass(frozen=True)
class HelmChart:
    """The operator's Helm chart: a directory (relative to the source tree's build, or the profile) or, with
    `repository`, a chart of a chart repository (or an oci:// reference) at `version`."""
    chart: str
    repository: str | None = None
    version: str | None = None
    release: str | None = None  # default: the chart's name
    values: dict = field(default_factory=dict)  # the chart's values, merged last
    crds: str = "apply"  # one of CRD_MODES


@dataclass(frozen=True)
class InstallSection:
    source: Source | None = None
    manifests: tuple[str, ...] = ()
    helm: HelmChart | None = None
    namespace: str = DEFAULT_NAMESPACE
    deployment: str | None = None  # the operator's Deployment (default: the first)
    container: str | None = None  # its container (default: the first)
    image: str | None = None
    args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)  # name -> value
    ready_timeout_seconds: float = READY_TIMEOUT
    submitter_image: str | None = None  # KubeRay's light-weight RayJob submitter of the same build


def release_tag(src: Source, profile_dir: Path) -> tuple[str, dict[str, str]]:
    """The tool-cache tag of a released `source` and its build's environment: the release itself, or with `patch:
    <file>` (relative to the profile) that release patched, tagged `<version>-<patch name>-<content hash>` so an
    edited patch is a new build and the image tag names what runs."""
    if not src.patch:
        return src.version, {}
    patch = Path(src.patch) if Path(src.patch).is_absolute() else profile_dir / src.patch
    if not patch.is_file():
        raise SectionError(f"operator source patch {patch} not found; check `install.<provider>.source.patch`")
    digest = hashlib.sha256(patch.read_bytes()).hexdigest()[:8]
    return f"{src.version}-{patch.stem}-{digest}", {"KUBERAY_BASE": src.version, "KUBERAY_PATCH": str(patch)}


def retagged(image: str, tag: str) -> str:
    """`image` (repository[:tag]; a registry host may have a port) with its tag replaced by `tag`."""
    repository = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return f"{repository}:{tag}"


def built_image(section: InstallSection, image: str | None, profile_dir: Path, provider: str,
                tree_tag: str | None = None) -> str | None:
    """The image `image` of an install section (its operator image or its submitter image) as the install runs
    it: a patched release's build under the build's tag; a source tree's build under `tree_tag` (the tree's key,
    source_tree.TreeKey.tag) on the providers that run the project's build (`TREE_BUILD_PROVIDERS`); otherwise
    (a release, `existing`'s published image of a tree source, a tree not given) as the profile names it."""
    src = section.source
    if not image or src is None:
        return image
    if src.is_tree:
        return retagged(image, tree_tag) if tree_tag and provider in TREE_BUILD_PROVIDERS else image
    return retagged(image, release_tag(src, profile_dir)[0]) if src.patch else image


def parse(raw, where: str) -> InstallSection:
    """The section `raw` (a profile's `install.<provider>` mapping) typed; SectionError naming `where` otherwise."""
    def fail(msg: str):
        raise SectionError(f"{where}{msg}")

    def strings(value, key: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            fail(f".{key} must be a list of strings")
        return tuple(value)

    def text(value, key: str) -> str | None:
        if value is not None and (not isinstance(value, str) or not value):
            fail(f".{key} must be a non-empty string")
        return value

    if not isinstance(raw, dict):
        fail(" must be a mapping")
    if unknown := sorted(set(raw) - set(INSTALL_KEYS)):
        fail(f": unknown key(s) {', '.join(unknown)} (allowed: {', '.join(INSTALL_KEYS)})")
    env = {} if raw.get("env") is None else raw["env"]
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        fail(".env must be a mapping of variable names to values")
    timeout = raw.get("readyTimeoutSeconds", READY_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        fail(f".readyTimeoutSeconds must be a number of seconds above 0, got {timeout!r}")
    submitter = raw.get("submitterImage")
    if submitter is not None and not (isinstance(submitter, str) and IMAGE.match(submitter)):
        fail(f".submitterImage must be an image with a tag (repository:tag), got {submitter!r}")
    section = InstallSection(
        source=None if raw.get("source") is None else _source(raw["source"], f"{where}.source"),
        manifests=strings(raw.get("manifests"), "manifests"),
        helm=None if raw.get("helm") is None else _helm(raw["helm"], f"{where}.helm"),
        namespace=text(raw.get("namespace"), "namespace") or DEFAULT_NAMESPACE,
        deployment=text(raw.get("deployment"), "deployment"), container=text(raw.get("container"), "container"),
        image=text(raw.get("image"), "image"), args=strings(raw.get("args"), "args"), env=dict(env),
        ready_timeout_seconds=float(timeout), submitter_image=submitter)
    if section.helm and section.args:
        fail(f".args cannot be passed through a chart; set the chart's values in {where}.helm.values")
    return section


def _source(raw, where: str) -> Source:
    if not isinstance(raw, dict):
        raise SectionError(f"{where} must be a mapping: {{name, version}} (a release) or {{name, repository, ref}} "
                           "(a source tree)")
    tree = "ref" in raw or "repository" in raw
    keys = TREE_SOURCE_KEYS if tree else RELEASE_SOURCE_KEYS
    required = keys if tree else keys[:2]
    extra = sorted(set(raw) - set(keys))
    missing = [k for k in required if not isinstance(raw.get(k), str) or not raw.get(k)]
    if extra or missing:
        what = "a source built from a tree" if tree else "a released source"
        raise SectionError(f"{where}: {what} takes {', '.join(keys)} "
                           + (f"(missing {', '.join(missing)})" if missing else f"(unknown {', '.join(extra)})"))
    if tree and raw["name"] != "kuberay":
        raise SectionError(f"{where}: only KubeRay trees can be built (name: kuberay), got '{raw['name']}'")
    if raw.get("patch") is not None and not isinstance(raw["patch"], str):
        raise SectionError(f"{where}.patch must be a file name (relative to the profile)")
    return Source(**raw)


def _helm(raw, where: str) -> HelmChart:
    if not isinstance(raw, dict):
        raise SectionError(f"{where} must be a mapping ({', '.join(HELM_KEYS)})")
    if unknown := sorted(set(raw) - set(HELM_KEYS)):
        raise SectionError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(HELM_KEYS)})")
    if not isinstance(raw.get("chart"), str) or not raw["chart"]:
        raise SectionError(f"{where}.chart must name a chart directory (relative to the source tree) or, with "
                           "`repository`, a chart")
    crds = raw.get("crds", "apply")
    if crds not in CRD_MODES:
        raise SectionError(f"{where}.crds must be one of {', '.join(CRD_MODES)}, got '{crds}'")
    values = {} if raw.get("values") is None else raw["values"]
    if not isinstance(values, dict):
        raise SectionError(f"{where}.values must be a mapping of the chart's values")
    if raw.get("repository") and not raw.get("version"):
        raise SectionError(f"{where}: a chart from a repository needs `version` (the chart version to install)")
    return HelmChart(chart=raw["chart"], repository=raw.get("repository") or None,
                     version=None if raw.get("version") is None else str(raw["version"]),
                     release=raw.get("release") or None, values=values, crds=crds)


def manifest_objects(text: str, origin: str) -> list[dict]:
    """The objects of a manifest's YAML documents (empty ones dropped); a document that is not YAML, or not an
    object with apiVersion, kind and metadata.name, is a SectionError naming `origin` and the document."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as e:
        raise SectionError(f"operator manifest {origin} is not valid YAML: {' '.join(str(e).split())}") from None
    for i, d in enumerate(docs, 1):
        meta = d.get("metadata") if isinstance(d, dict) else None
        if not (isinstance(d, dict) and isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str)
                and isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]):
            raise SectionError(f"operator manifest {origin}, document {i}: not a Kubernetes object (it needs "
                               "apiVersion, kind and metadata.name)")
    return docs


def check_own_manifests(section: InstallSection, profile_dir: Path, where: str) -> None:
    """A section with no source or chart installs manifests of the profile's own (paths relative to its directory):
    each must exist and its YAML files hold Kubernetes objects, checked when the profile loads. Kustomize
    directories are rendered at install (by the provider's kubectl); manifests in the tool cache are built then."""
    if section.source is not None or section.helm is not None:
        return
    for m in section.manifests:
        if "${CACHE}" in m:
            continue
        p = Path(m) if Path(m).is_absolute() else profile_dir / m
        if not p.exists():
            raise SectionError(f"{where}.manifests: {p} not found (relative paths are relative to the profile)")
        if p.is_dir() and (p / "kustomization.yaml").exists():
            continue
        for f in sorted(p.glob("*.yaml")) if p.is_dir() else [p]:
            manifest_objects(f.read_text(), str(f))
