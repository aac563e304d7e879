"""Published results: `reports/published/<project>/<version>/`, one verified run per operator release.

`publish(run_dir)` verifies a run against this checkout and against the suite commit it names (a run of uncommitted
tests or samples could not be checked later), and copies its report files (and its signature) under the
implementation's project and version read from the report; `publish --sign-key KEY` signs the copy (signing.py).
`check_published()` verifies every published run as CI does (`make verify-published`, and a unit test in
`make test`): the directory must be the one the report names, and the report must verify against the suite that made it,
which is this checkout when the suite digests match and otherwise the commit its `suiteVersion` names
(`<version>+g<commit>`, or a release's tag `v<version>`: release.py), read from git: the files its digest scheme
covers, the profiles, and that commit's feature list (which sorts the report's statistics) and certify.py (which says
the digest scheme its runs record). Each problem is one line.
"""
from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import yaml

from rayconformance.report import certify, release, signing
from rayconformance.report.results import FILENAME

PUBLISHED = certify.ROOT / "reports" / "published"
FILES = (FILENAME, signing.SIGNATURE, "report.html", "junit.xml")  # what a published run holds; the report is required
BED = "local"  # the provider of the unsuffixed column: the project's own bed, where the first published runs came from
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$")  # a project or version as one path component


class PublishError(ValueError):
    """A run that cannot be published; the message is one line."""


def read_report(run_dir: Path) -> dict | None:
    try:
        report = yaml.safe_load((run_dir / FILENAME).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return report if isinstance(report, dict) else None


def default_ray_version(profile: str, root: Path = certify.ROOT) -> str | None:
    """The first of `rayVersions` in profiles/<profile>.yaml (the Ray a run of it uses by default), if known."""
    try:
        versions = (yaml.safe_load((root / "profiles" / f"{profile}.yaml").read_text()) or {}).get("rayVersions")
    except (OSError, yaml.YAMLError):
        return None
    return str(versions[0]) if versions else None


def place(report: dict) -> tuple[str, str]:
    """(project, version) of the report's implementation block, each usable as a directory name. A run with another
    Ray than its profile's default is a column of its own: `<version>+ray<X.Y.Z>` (e.g. v1.6.1+ray2.46.0); so is a
    run on another provider than the project's own bed (`local`), beside it: `<version>+<provider>` (v1.7.0+kind,
    a real kubelet's run a certifier can compare with KubeRay's own CI); and a run of another operating mode than
    `default` (--mode): `<version>+mode-<mode>`."""
    impl = report.get("implementation") or {}
    out = []
    for key in ("project", "version"):
        value = str(impl.get(key) or "")
        if not NAME.match(value) or value in (".", ".."):
            raise PublishError(f"implementation.{key} {value!r} cannot name a directory: use letters, digits, "
                               "'.', '_', '+' or '-' (--report-project / --report-version set them)")
        out.append(value)
    operator = report.get("operator") or {}
    ray = str(operator.get("rayVersion") or "")
    if ray and NAME.match(ray) and ray != default_ray_version(str(operator.get("profile") or "")):
        out[1] += f"+ray{ray}"
    provider = str((report.get("cluster") or {}).get("provider") or "")
    if provider and provider != BED and NAME.match(provider):
        out[1] += f"+{provider}"
    mode = str(report.get("mode") or "default")
    if mode != "default":
        if not NAME.match(mode):
            raise PublishError(f"mode {mode!r} cannot name a directory: use letters, digits, '.', '_', '+' or '-' "
                               "(--mode sets it)")
        out[1] += f"+mode-{mode}"
    return out[0], out[1]


def publish(run_dir: Path, published: Path | None = None, replace: bool = False,
            sign_key: Path | None = None) -> Path:
    """Copy a verified run to `published/<project>/<version>/`; returns that directory. With `sign_key` (a PEM
    Ed25519 private key) the published copy is signed by it (signing.py), in place of any signature the run had."""
    try:
        key = signing.load_private(sign_key) if sign_key else None
    except signing.SigningError as e:
        raise PublishError(str(e)) from None
    problems = certify.verify(run_dir)
    if problems:
        more = (f" (and {len(problems) - 1} more: `python -m rayconformance verify {run_dir}` lists them)"
                if len(problems) > 1 else "")
        raise PublishError(f"{run_dir} does not verify: {problems[0]}{more}")
    report = read_report(run_dir)
    project, version = place(report)
    committed = against_commit(report, run_dir)
    if committed:
        raise PublishError(f"{run_dir}: {committed[0]}; a published run is checked against the commit it names: "
                           "run it from a clean checkout")
    target = (published or PUBLISHED) / project / version
    if target.exists() and not replace:
        raise PublishError(f"{target} exists already; pass --replace to publish this run in its place")
    staging = target.with_name(f".{version}.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in FILES:
        if (run_dir / name).is_file() and not (key and name == signing.SIGNATURE):
            shutil.copy2(run_dir / name, staging / name)
    if key:
        signing.sign(staging, key)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def published_dirs(published: Path | None = None) -> list[Path]:
    """Every `<project>/<version>` directory of the layout, whatever it holds."""
    published = published or PUBLISHED
    if not published.is_dir():
        return []
    return sorted(v for p in published.iterdir() if p.is_dir() and not p.name.startswith(".")
                  for v in p.iterdir() if v.is_dir() and not v.name.startswith("."))


def check_published(published: Path | None = None, root: Path = certify.ROOT) -> list[str]:
    """Every problem of every published run, one line each prefixed by its directory."""
    published, problems = published or PUBLISHED, []
    for d in published_dirs(published):
        rel = d.relative_to(published).as_posix()
        problems += [f"{rel}: {p}" for p in check_one(d, root)]
    return problems


def check_one(run_dir: Path, root: Path = certify.ROOT) -> list[str]:
    report = read_report(run_dir)
    if report is None:
        return certify.verify(run_dir, root)  # its one line on a missing or unreadable report
    try:
        where = place(report)
    except PublishError as e:
        return [str(e)]
    if where != (run_dir.parent.name, run_dir.name):
        return [f"the report is of {where[0]} {where[1]}: publish it under {'/'.join(where)}"]
    if certify.digests_match(report, root):
        return certify.verify(run_dir, root)
    return against_commit(report, run_dir)


def against_commit(report: dict, run_dir: Path) -> list[str]:
    """The problems of the run against the suite of the commit its suiteVersion names (read from git)."""
    version = str(report.get("suiteVersion") or "")
    commit = release.suite_commit(version)
    if not commit:
        why = ("its release tag is not in this clone (fetch the tags)" if release.VERSION.match(version)
               else "the suite ran outside a git checkout")
        return [f"suiteVersion {version!r} names no suite commit to check the run against ({why})"]
    with tempfile.TemporaryDirectory(prefix="rayconf-suite-") as tmp:
        err = suite_at(commit, Path(tmp), certify.SCHEMES.get(certify.scheme_of(report), ()))
        if err:
            return [err]
        problems = certify.verify(run_dir, Path(tmp))
    name = f"release v{version}" if release.VERSION.match(version) else f"commit {commit}"
    return [p.replace("is not this suite's", f"is not suite {name}'s") for p in problems]


def suite_at(commit: str, dest: Path, parts=certify.SUITE_PARTS, repo: Path = certify.ROOT) -> str | None:
    """Write what `verify` reads of the suite of `commit` (of the clone at `repo`) under `dest`: the directories of
    the digest scheme's `parts`, the profiles, the feature list and certify.py; a one-line problem, or None."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=120)

    try:
        if git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").returncode != 0:
            return (f"suite commit {commit} is not in this clone's history (a shallow clone? fetch it, e.g. "
                    "actions/checkout with fetch-depth: 0)")
        wanted = [*dict.fromkeys(d for d, _ in parts), "profiles", *certify.CERTIFY_FILES,
                  *(f.removesuffix("/__init__.py") for f in certify.FEATURES_FILES)]  # a package: all of it
        found = git("ls-tree", "--name-only", commit, "--", *wanted).stdout.split()
        r = git("archive", "--format=tar", commit, "--", *[p.decode() for p in found]) if found else None
    except (OSError, subprocess.SubprocessError) as e:
        return f"could not read suite commit {commit} with git: {e}"
    if r is not None and r.returncode != 0:
        return f"could not read suite commit {commit} with git: {r.stderr.decode().strip()[:200]}"
    if r is not None:
        with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
            tar.extractall(dest, filter="data")
    return None
