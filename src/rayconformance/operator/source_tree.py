"""An operator built from a KubeRay source tree (a clone at a release tag, the default branch, or a pull request's
work tree), for profiles whose `install.<provider>.source` names a repository and a ref instead of a released
module version:

    source: {name: kuberay, repository: https://github.com/ray-project/kuberay, ref: v1.7.0}

The profile names the real source; the tree itself comes from the user: `--operator-tree PATH` or the environment
variable RAYCONF_OPERATOR_TREE (`tree_path`). Without one, `require_tree` says in one line which profile needs which
source and how to give it.

A tree is a git work tree holding either the whole repository (`ray-operator/go.mod`, and the chart
`helm-chart/kuberay-operator/`) or the `github.com/ray-project/kuberay/ray-operator` module alone. Its build is keyed
by the commit and, when the files that are built differ from that commit (uncommitted or untracked changes: a pull
request's stand-in), a digest of those differences (`tree_key`), so a changed tree is a new build. The build
(`build`, through `clusters/local/build-tools.sh kuberay@tree-<key>`) lands in the tool cache as
`kuberay-tree-<key>/`: `bin/ray-operator`, the module's `config/` and the chart under `helm-chart/`. The operator image
of such a build is `<image repository>:tree-<key>` (install_section.py's `built_image`): the local bed maps that tag to
the build, kind's offline image builder makes that image from it (`clusters/kind/build-app-images.sh kuberay`). An
earlier release's chart, for the release swap of a Helm install, comes from the same repository at that release's
tag (`chart_at`).
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from .install_section import InstallSection, Source, built_image

ENV = "RAYCONF_OPERATOR_TREE"
OPTION = "--operator-tree"
MODULE = "github.com/ray-project/kuberay/ray-operator"
MODULE_DIR = "ray-operator"  # in a clone of the repository
CHART_DIR = "helm-chart/kuberay-operator"  # in a clone of the repository
TAG_PREFIX = "tree-"


class SourceTreeError(RuntimeError):
    """No usable source tree; the message is one line for the user."""


@dataclass(frozen=True)
class TreeKey:
    tree: Path
    module: str  # the module's directory relative to the tree: "ray-operator" or "."
    chart: str | None  # the chart's directory relative to the tree, if it has one
    commit: str  # HEAD, 40 hex digits
    dirty: str | None  # digest of the built files' differences from HEAD, None when there are none

    @property
    def tag(self) -> str:
        """The build's tag: `tree-<commit12>`, with `-dirty-<digest8>` for a tree with changes."""
        return f"{TAG_PREFIX}{self.commit[:12]}" + (f"-dirty-{self.dirty[:8]}" if self.dirty else "")

    @property
    def paths(self) -> list[str]:
        """What the build reads from the tree (the dirty digest covers these only)."""
        return [self.module] + ([self.chart] if self.chart else [])


@dataclass(frozen=True)
class TreeBuild:
    key: TreeKey
    directory: Path  # kuberay-<tag> in the tool cache

    @property
    def binary(self) -> Path:
        return self.directory / "bin" / "ray-operator"

    @property
    def chart(self) -> Path | None:
        """The chart copied from the tree, if it had one."""
        p = self.directory / CHART_DIR
        return p if p.is_dir() else None


def tree_path(option: str | os.PathLike | None = None) -> Path | None:
    """The source tree given: `--operator-tree`, else RAYCONF_OPERATOR_TREE, else None."""
    value = option if option else os.environ.get(ENV) or None
    return Path(value).expanduser().resolve() if value else None


def missing_tree_message(profile_name: str, src: Source) -> str:
    return (f"operator profile {profile_name} builds KubeRay from source ({src.repository} at {src.ref}) and no "
            f"source tree was given: clone it at that ref and pass {OPTION} PATH (or set {ENV}=PATH)")


def tree_source(profile, provider: str) -> Source | None:
    """The profile's tree `source` for the provider, or None when it installs a release (or nothing)."""
    spec = (getattr(profile, "install", None) or {}).get(provider)
    return spec.source if spec is not None and spec.source is not None and spec.source.is_tree else None


def require_tree(profile, provider: str, option: str | os.PathLike | None = None) -> TreeKey | None:
    """For a run that installs the profile on `provider`: the key of the source tree it needs (None when it
    installs a release). SourceTreeError, one line, when the profile needs a tree and none (or no usable one) is
    given."""
    src = tree_source(profile, provider)
    if src is None:
        return None
    tree = tree_path(option)
    if tree is None:
        raise SourceTreeError(missing_tree_message(profile.name, src))
    return tree_key(tree)


def _git(tree: Path, *args: str, binary: bool = False):
    r = subprocess.run(["git", "-C", str(tree), "-c", "core.quotepath=off", *args], capture_output=True,
                       text=not binary)
    if r.returncode != 0:
        err = r.stderr if not binary else r.stderr.decode(errors="replace")
        last = [ln.strip() for ln in err.splitlines() if ln.strip()][-1:] or [f"exit {r.returncode}"]
        raise SourceTreeError(f"operator tree {tree}: git {args[0]} failed: {last[0]}")
    return r.stdout


def layout(tree: Path) -> tuple[str, str | None]:
    """(module directory, chart directory or None) of a KubeRay tree, relative to it."""
    if not tree.is_dir():
        raise SourceTreeError(f"operator tree {tree} is not a directory; pass a KubeRay clone to {OPTION} "
                              f"(or {ENV})")
    module = MODULE_DIR if (tree / MODULE_DIR / "go.mod").is_file() else "."
    gomod = tree / module / "go.mod"
    first = next((ln.split() for ln in (gomod.read_text().splitlines() if gomod.is_file() else [])
                  if ln.startswith("module ")), [])
    if first[1:2] != [MODULE]:
        raise SourceTreeError(f"operator tree {tree} is no KubeRay tree: neither {MODULE_DIR}/go.mod nor a go.mod "
                              f"of module {MODULE} is there")
    return module, (CHART_DIR if (tree / CHART_DIR).is_dir() else None)


def tree_key(tree: Path) -> TreeKey:
    """The build key of the tree: its commit, and a digest of how the files the build reads differ from it
    (tracked files changed, staged or not, deleted or added; untracked files not ignored), None if they do not."""
    tree = Path(tree)
    module, chart = layout(tree)
    if _git(tree, "rev-parse", "--is-inside-work-tree").strip() != "true":
        raise SourceTreeError(f"operator tree {tree} is not a git work tree")
    commit = _git(tree, "rev-parse", "--verify", "HEAD^{commit}").strip()
    paths = [module] + ([chart] if chart else [])
    status = _git(tree, "status", "--porcelain", "-z", "--untracked-files=all", "--", *paths)
    dirty = None
    if status:
        h = hashlib.sha256()
        h.update(_git(tree, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--binary", "HEAD", "--",
                      *paths, binary=True))
        untracked = _git(tree, "ls-files", "-z", "--others", "--exclude-standard", "--", *paths)
        for name in sorted(n for n in untracked.split("\0") if n):
            f = tree / name
            h.update(b"\0untracked\0" + name.encode() + b"\0")
            if f.is_file():
                h.update(f.read_bytes())
        dirty = h.hexdigest()
    return TreeKey(tree=tree, module=module, chart=chart, commit=commit, dirty=dirty)


def build(key: TreeKey) -> TreeBuild:
    """The tree's build in the tool cache, built on first use (`build-tools.sh kuberay@<tag>`, which copies the
    tree's files first and refuses a tree no longer at the key's commit)."""
    from rayconformance.clusters.toolcache import ToolBuildError, ensure

    try:
        directory = ensure("kuberay", key.tag, "bin/ray-operator", env={ENV: str(key.tree)})
    except ToolBuildError as e:
        raise SourceTreeError(f"operator tree {key.tree}: {e}") from None
    if not (directory / "config").is_dir():
        raise SourceTreeError(f"operator tree build {directory} has no config/; remove it and retry")
    return TreeBuild(key=key, directory=directory)


def build_submitter(key: TreeKey) -> Path:
    """The tree build's bin/submitter (KubeRay's light-weight RayJob submitter, the tree's rayjob-submitter/cmd),
    built with the build, or alone into a build cached without it."""
    from rayconformance.clusters.toolcache import ToolBuildError, ensure

    try:
        return ensure("kuberay", key.tag, "bin/submitter", env={ENV: str(key.tree)}) / "bin" / "submitter"
    except ToolBuildError as e:
        raise SourceTreeError(f"operator tree {key.tree}: the submitter: {e}") from None


def chart_at(tree: Path, ref: str, chart: str, dest: Path, release: str | None = None) -> Path:
    """The chart directory `chart` (relative to the tree, e.g. helm-chart/kuberay-operator) of the tree's repository
    at `ref` (an earlier release's tag), extracted with `git archive` into `dest/<commit>/` (kept there: a second
    call reuses it). `release` names what the ref is for in the message. SourceTreeError, one line, when the
    repository lacks the ref or the chart at it."""
    tree = Path(tree)
    for_what = f" (the release {release})" if release else ""
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise SourceTreeError(f"operator tree {tree} has no ref {ref}{for_what}: fetch the release tags into it "
                              f"(git -C {tree} fetch --tags) and rerun")
    commit = r.stdout.strip()
    out = Path(dest) / commit
    if (out / chart / "Chart.yaml").is_file():
        return out / chart
    archive = subprocess.run(["git", "-C", str(tree), "archive", "--format=tar", commit, "--", chart],
                             capture_output=True)
    if archive.returncode != 0:
        raise SourceTreeError(f"operator tree {tree} at {ref} has no {chart}{for_what}: {_last_line(archive.stderr)}")
    staging = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=_made(Path(dest))))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(staging, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        if not (staging / chart / "Chart.yaml").is_file():
            raise SourceTreeError(f"operator tree {tree} at {ref} has no chart in {chart} (no Chart.yaml){for_what}")
        if not out.exists():
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / chart


def _made(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return d


def _last_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "git archive failed"


def resolve_install(spec: InstallSection, provider: str, profile_name: str, option: str | os.PathLike | None = None
                    ) -> tuple[Path, InstallSection, TreeKey] | None:
    """For an install section whose `source` is a tree: the tree's build in the tool cache (built on first use; its
    `config/` and `helm-chart/` are what `manifests` and `helm.chart` are relative to), the section with the
    build's images (install_section.py's `built_image`: on the providers that run the project's build; on kind its image
    archive is made when missing), and the tree's key. None for an install of a release. SourceTreeError, one
    line, when no usable tree is given."""
    src = spec.source
    if src is None or not src.is_tree:
        return None
    tree = tree_path(option)
    if tree is None:
        raise SourceTreeError(missing_tree_message(profile_name, src))
    key = tree_key(tree)
    built = build(key)
    if spec.submitter_image:
        build_submitter(key)
    # the operator's image and its submitter's: one build
    images = {"image": built_image(spec, spec.image, built.directory, provider, key.tag),
              "submitter_image": built_image(spec, spec.submitter_image, built.directory, provider, key.tag)}
    if provider == "kind":
        for image in filter(None, images.values()):
            ensure_kind_image(key, image)
    return built.directory, replace(spec, **images), key


def ensure_kind_image(key: TreeKey, image: str) -> str:
    """For the kind provider: the offline image archive of the tree's build (`image`, from `built_image`), made by
    `clusters/kind/build-app-images.sh kuberay` for this tag alone when the archive index lacks it. Returns the
    image name; SourceTreeError (one line, naming the log) when it cannot be made."""
    from rayconformance.clusters import kind as kindtools

    if image in kindtools.image_archives():
        return image
    script = kindtools.HERE / "build-app-images.sh"
    r = subprocess.run(["bash", str(script), "kuberay"], capture_output=True, text=True,
                       env={**os.environ, "KUBERAY_IMAGE_TAGS": key.tag})
    if r.returncode != 0 or image not in kindtools.image_archives():
        last = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()][-1:] or [f"exit {r.returncode}"]
        raise SourceTreeError(f"the kind image {image} of the operator tree build could not be made: {last[0]}")
    return image


def main(argv: list[str] | None = None) -> int:
    """`python -m rayconformance.operator.source_tree key|build [PATH]` (default: $RAYCONF_OPERATOR_TREE): print
    the tree's build tag, or build it into the tool cache and print the directory."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("key", "build") or len(args) > 2:
        sys.stderr.write("usage: python -m rayconformance.operator.source_tree key|build [PATH]\n")
        return 2
    try:
        tree = tree_path(args[1] if len(args) > 1 else None)
        if tree is None:
            raise SourceTreeError(f"no operator tree: pass PATH or set {ENV}")
        key = tree_key(tree)
        print(key.tag if args[0] == "key" else build(key).directory)
    except SourceTreeError as e:
        sys.stderr.write(f"rayconformance: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
