"""Images -> host runtimes, per the cluster definition's image rules.

    ray      the tag's Ray version -> /var/cache/rayconformance/venvs/ray-<version> on PATH (created on demand with
             pip, like an image pull: the container waits as ContainerCreating meanwhile)
    host     host binaries; the rule's entrypoint is used when the Pod gives no command
    kuberay  the tag's KubeRay build; `/manager` (the operator image's entrypoint) -> its ray-operator binary, or
             with the rule's `binary`, its first entrypoint word -> that binary of the build (the submitter image's
             `/submitter` -> bin/submitter)
    tool     another binary of the tool cache: /var/cache/rayconformance/<tool>-<tag>/bin on PATH (e.g. traefik)

A rule also states what the image itself gives a container (`apply_rule`): ENV, WORKDIR, VOLUMEs (a fresh
directory per container run) and USER.

An image no rule maps (or whose tag names nothing we can build, e.g. a Ray version PyPI does not have: "not found:
Ray 2.99.0 does not exist") fails like an unpullable image: waiting reason ErrImagePull, then ImagePullBackOff
between retries.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

from ..section import LocalSection, image_tag
from ...toolcache import CACHE

log = logging.getLogger("nodeagent.images")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VENVS = CACHE / "venvs"
PULL_RETRY = 60.0  # seconds before a failed venv build is tried again
SYSTEM_PYTHON = "/usr/bin/python3"


class ImageError(RuntimeError):
    """The image cannot be materialized: ErrImagePull."""


class ImagePulling(RuntimeError):
    """The image is being materialized (a venv install): try again later."""


@dataclass
class Runtime:
    kind: str
    image: str
    image_id: str
    path: str
    entrypoint: list[str] = field(default_factory=list)
    argv0_map: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    home: str = "/root"
    files: dict[str, str] = field(default_factory=dict)  # files created in the container if missing
    env: dict[str, str] = field(default_factory=dict)  # like an image's ENV: the container's env overrides it
    volumes: list[str] = field(default_factory=list)  # like an image's VOLUMEs: an empty directory per run
    uid: int = 0  # like an image's USER
    gid: int = 0
    note: str = ""  # what of the image's rule is not honored (reported as a NotHonored event)

    def argv(self, command: list[str] | None, args: list[str] | None) -> list[str]:
        argv = list(command) + list(args or []) if command else list(self.entrypoint) + list(args or [])
        if argv and argv[0] in self.argv0_map:
            argv[0] = self.argv0_map[argv[0]]
        return argv


def ray_version(image: str) -> str:
    m = re.match(r"^(\d+\.\d+\.\d+)", image_tag(image))
    if not m:
        raise ImageError(f'failed to pull image "{image}": tag "{image_tag(image)}" does not name a Ray release '
                         f"(the local provider installs Ray from PyPI by version)")
    return m.group(1)


CONSTRAINTS = Path(__file__).resolve().parent.parent / "ray-constraints.txt"
MARKER = ".complete-c1"  # bump the suffix when ray-constraints.txt changes, so older venvs are rebuilt


def pip_failure(version: str, stderr: str) -> str:
    """The pull error for a failed `pip install ray==<version>`: a version PyPI does not have reads like a
    registry's "not found" for the tag."""
    m = re.search(r"Could not find a version that satisfies the requirement .*?\(from versions: ([^)]*)\)", stderr)
    if m or "No matching distribution found" in stderr:
        known = [v.strip() for v in m.group(1).split(",")] if m else []
        if version not in known:
            near = [v for v in known if re.fullmatch(r"\d+\.\d+\.\d+", v)][-3:]
            return (f"not found: Ray {version} does not exist (PyPI has no release ray=={version}"
                    + (f"; latest: {', '.join(near)}" if near else "") + ")")
        return (f"not found: ray=={version} has no distribution for this host's Python "
                f"{sys.version_info.major}.{sys.version_info.minor}")
    return f"pip install ray[default,serve]=={version} failed: {stderr.strip()[-500:]}"


def usable_by_all(path: Path) -> bool:
    """Whether any user can execute `path` (every directory on the way, symlinks resolved, traversable by others)."""
    try:
        real = path.resolve(strict=True)
    except OSError:
        return False
    if not real.stat().st_mode & 0o001:
        return False
    return all(p.stat().st_mode & 0o001 for p in real.parents)


def venv_ready(version: str) -> bool:
    """The venv is complete and its interpreter runs as any user (an older one, made with an interpreter under
    /root, is not ready: ensure_ray_venv remakes it)."""
    venv = VENVS / f"ray-{version}"
    return (venv / MARKER).exists() and usable_by_all(venv / "bin" / "python3")


def ensure_ray_venv(version: str, python: str | None = None) -> Path:
    """Create the Ray virtualenv for `version` if missing (concurrent-safe: a file lock per version)."""
    venv = VENVS / f"ray-{version}"
    VENVS.mkdir(parents=True, exist_ok=True)
    with FileLock(VENVS / f".ray-{version}.lock"):  # ray-venv.sh takes the same lock with flock(1)
        if venv_ready(version):
            return venv
        if venv.exists():
            # a half-built venv from an interrupted install, or one a container's non-root user cannot run
            shutil.rmtree(venv)
        # the system's Python (not one under /root, say pyenv's): a container's non-root user must run it
        py = python or (SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else None) or \
            shutil.which("python3", path=BASE_PATH) or sys.executable
        t = time.monotonic()
        subprocess.run([py, "-m", "venv", str(venv)], check=True, capture_output=True)
        r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-c", str(CONSTRAINTS),
                            f"ray[default,serve]=={version}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise ImageError(pip_failure(version, r.stderr))
        if not usable_by_all(venv / "bin" / "python3"):
            shutil.rmtree(venv, ignore_errors=True)
            raise ImageError(f"the Ray {version} venv's interpreter ({py}) is not runnable by every user; "
                             "install the system's python3-venv")
        (venv / MARKER).write_text(f"ray {version} installed in {time.monotonic() - t:.0f}s\n")
        return venv


def apply_rule(rt: Runtime, rule) -> None:
    """What the image itself gives a container, from its rule: ENV, WORKDIR, VOLUMEs, USER."""
    rt.env = dict(rule.env)
    if rule.working_dir:
        rt.workdir = rule.working_dir
    rt.volumes = list(rule.volumes)
    if rule.user:
        uid, _, gid = rule.user.partition(":")
        rt.uid, rt.gid = int(uid), int(gid or 0)  # (a real runtime takes a missing gid from /etc/passwd)
    if rt.kind == "ray" and rt.uid and not usable_by_all(Path(rt.path.split(":", 1)[0]) / "python3"):
        # a venv made before venvs used the system's Python: its interpreter only root can run
        rt.note = (f"image user {rule.user} (the Ray venv {Path(rt.path.split(':', 1)[0]).parent} was made with "
                   "an interpreter only root can run; remove it to have it remade)")
        rt.uid = rt.gid = 0


class Images:
    def __init__(self, defn: LocalSection):
        self.defn = defn
        self._lock = threading.Lock()
        self._pulls: dict[str, threading.Thread] = {}
        self._failed: dict[str, tuple[float, str]] = {}

    def resolve(self, image: str) -> Runtime:
        rule = self.defn.image_rule(image)
        if rule is None:
            raise ImageError(f'failed to pull image "{image}": no image rule in cluster definition '
                             f"'{self.defn.name}' maps it to a host runtime")
        rt = self._runtime(image, rule)
        apply_rule(rt, rule)
        return rt

    def _runtime(self, image: str, rule) -> Runtime:
        if rule.runtime == "host":
            return Runtime("host", image, f"host://{image}", BASE_PATH, list(rule.entrypoint))
        if rule.runtime == "kuberay":
            _, tag, marker = rule.build(image)
            binary = CACHE / f"kuberay-{tag}" / marker
            if not binary.exists():
                raise ImageError(f'failed to pull image "{image}": KubeRay {tag} is not built with {binary.name} '
                                 f"({binary} missing; run clusters/local/build-tools.sh kuberay@{tag})")
            entry = list(rule.entrypoint) or ["/manager"]
            if rule.binary:  # another binary of the build, under the image's entrypoint
                return Runtime("kuberay", image, f"kuberay://{tag}/{rule.binary}", BASE_PATH, entry,
                               {entry[0]: str(binary)})
            return Runtime("kuberay", image, f"kuberay://{tag}", BASE_PATH, entry, {"/manager": str(binary)})
        if rule.runtime == "tool":
            _, tag, marker = rule.build(image)
            built, bindir = CACHE / f"{rule.tool}-{tag}" / marker, CACHE / f"{rule.tool}-{tag}" / "bin"
            if not built.exists():
                raise ImageError(f'failed to pull image "{image}": {rule.tool} {tag} is not built '
                                 f"({built} missing; run clusters/local/build-tools.sh {rule.tool})")
            return Runtime("tool", image, f"{rule.tool}://{tag}", f"{bindir}:{BASE_PATH}", list(rule.entrypoint))
        version = ray_version(image)
        venv = VENVS / f"ray-{version}"
        if not venv_ready(version):
            self._pull(version, image)
        # Like the Ray images: HOME and WORKDIR /home/ray (created in an overlay, never on the host), and a
        # ~/.profile keeping the venv on PATH for login shells (`bash -lc`, which KubeRay uses), whose
        # /etc/profile resets PATH on a Debian host
        return Runtime("ray", image, f"ray://{version}", f"{venv / 'bin'}:{BASE_PATH}", list(rule.entrypoint),
                       workdir="/home/ray", home="/home/ray",
                       files={"/home/ray/.profile": f'export PATH="{venv / "bin"}:$PATH"\n'})

    def _pull(self, version: str, image: str) -> None:
        with self._lock:
            failed = self._failed.get(version)
            if failed and time.monotonic() - failed[0] < PULL_RETRY:
                raise ImageError(f'failed to pull and unpack image "{image}": {failed[1]}')
            t = self._pulls.get(version)
            if t is None or not t.is_alive():
                if venv_ready(version):
                    return
                t = threading.Thread(target=self._do_pull, args=(version,), name=f"pull-ray-{version}", daemon=True)
                self._pulls[version] = t
                t.start()
        raise ImagePulling(f"installing Ray {version} into {VENVS / f'ray-{version}'}")

    def _do_pull(self, version: str) -> None:
        try:
            log.info("creating Ray %s virtualenv", version)
            ensure_ray_venv(version)
            self._failed.pop(version, None)
        except Exception as e:  # noqa: BLE001 - reported as the image's pull error
            log.error("Ray %s virtualenv failed: %s", version, e)
            self._failed[version] = (time.monotonic(), str(e))
