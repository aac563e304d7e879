"""The simulated hosted runner's machine (ci/hosted_runner.py), set up as root and taken down again on any exit:
the runner's user with passwordless sudo (a sudoers.d file) in the `docker` group, the project's Docker engine
(`make engine-up`) with its socket given to that group, the job's directory (workspace, action path, RUNNER_TEMP, the
sudo log shim, the runner image's kind and kubectl), a sampler of what runs in the engine, and the offline images
offered to the runner's tool cache (its registry stand-in). `teardown()` removes everything `setup()` made, each
part tried whatever the one before did: the user's processes (by pid) and files in the shared temporary directories,
the kind clusters the job made, the engine if it started it, the sudoers file, the user and its home, the docker
group and the sudo package when it added them, the job's directory.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rayconformance.clusters import kind as kindtools
from rayconformance.clusters.toolcache import CACHE, versions
from rayconformance.operator.source_tree import CHART_DIR, MODULE_DIR

TREE_DIRS = (MODULE_DIR, CHART_DIR)  # a KubeRay tree's operator module and Helm chart (operator/source_tree.py)

ROOT = Path(__file__).resolve().parents[1]
MARK = "rayconformance hosted-runner simulation"  # the user's GECOS: a user without it is never touched
RUNNER_UID = 1901  # away from the machine's users and the Ray image's 1000 (its Pods' processes show on the host)
SHIM = """#!/bin/bash
# the runner's sudo, logged by the hosted-runner simulation (ci/runner_machine.py), then the real one
{{ printf '%s uid=%s cwd=%s:' "$(date -u +%H:%M:%S)" "$(id -u)" "$PWD"; printf ' %q' "$@"; echo; }} >> {log}
exec /usr/bin/sudo "$@"
"""
KIND_LABEL = "io.x-k8s.kind.cluster"


class SimulationError(Exception):
    """A one-line reason the simulation cannot start."""


def sh(*argv, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], check=check, text=True, **kw)


def engine_env() -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": f"unix://{kindtools.ENGINE_SOCKET}"}


@dataclass
class Layout:
    """Where the job's files go (all under `job`, removed at the end)."""
    job: Path
    user: str

    def __post_init__(self):
        j = self.job
        self.workspace = j / "work" / "rayconformance" / "rayconformance"  # as a runner lays a checkout out
        self.action_path = j / "work" / "_actions" / "rayconformance" / "HEAD"
        self.tree = self.workspace / "operator-tree"
        self.temp, self.state, self.tools = j / "temp", j / "state", j / "tools"
        self.shim, self.image_bin = j / "sudo-shim", j / "image-bin"
        self.sudo_log, self.job_log = j / "sudo.log", j / "job.log"
        self.home = Path("/home") / self.user


@dataclass
class Machine:
    layout: Layout
    tree_source: Path
    added: list[str] = field(default_factory=list)  # what setup() made, in order (teardown undoes it backwards)
    clusters_before: set[str] = field(default_factory=set)
    seen: dict[str, str] = field(default_factory=dict)  # kind node container -> "image (cluster), first seen"
    seeded: set[str] = field(default_factory=set)
    user_id: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)

    # --- setup --------------------------------------------------------------------------------------------------

    def preflight(self) -> None:
        if os.geteuid() != 0:
            raise SimulationError("needs root: it creates the runner's user, its sudoers file and the engine "
                                  "(--dry-run shows the plan as anyone)")
        if not (self.tree_source / ".git").exists():
            raise SimulationError(f"RAYCONF_OPERATOR_TREE={self.tree_source} is no git checkout: set it to a KubeRay "
                                  "v1.7.0 clone (the runner checks it out as the caller's operator tree)")
        for tool, how in (("kind", "make kind-tools"), ("kubectl", "make tools")):
            if kindtools.cached_tool(tool) is None:
                raise SimulationError(f"the runner image's {tool} is not in {CACHE}: run `{how}` as root first")
        if kindtools.node_image() is None or not kindtools.image_archives():
            raise SimulationError("the offline kind images (the runner's registry stand-in) are not built: run "
                                  "`make kind-images CONFORMANCE_ARGS=\"--operator-profile kuberay-v1.7.0\"` first")
        pw = sh("getent", "passwd", self.layout.user, check=False, capture_output=True).stdout
        if pw and MARK not in pw:
            raise SimulationError(f"user {self.layout.user} exists and is not the simulation's: pick another (--user)")
        other = sh("getent", "passwd", str(RUNNER_UID), check=False, capture_output=True).stdout
        if other and not other.startswith(self.layout.user + ":"):
            raise SimulationError(f"uid {RUNNER_UID} belongs to {other.split(':')[0]}; change RUNNER_UID")

    def setup(self) -> None:
        lay = self.layout
        if not Path("/usr/bin/sudo").exists():
            print("setup: installing the sudo package (a hosted runner has it)", flush=True)
            sh("apt-get", "install", "-y", "-qq", "--no-install-recommends", "sudo", stdout=subprocess.DEVNULL,
               env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            self.added.append("sudo-package")
        sh("make", "-C", ROOT, "--no-print-directory", "kind-deps")  # the engine's packages (docker.io: its group)
        if sh("getent", "group", "docker", check=False, capture_output=True).returncode != 0:
            sh("groupadd", "--system", "docker")
            self.added.append("docker-group")
        if sh("getent", "passwd", lay.user, check=False, capture_output=True).returncode == 0:
            self._kill_user_processes()  # a leftover of an interrupted run (ours: preflight checked the mark)
            self._remove_user()
        sh("useradd", "-m", "-u", RUNNER_UID, "-s", "/bin/bash", "-c", MARK, "-G", "docker", lay.user)
        self.added.append("user")
        sudoers = Path("/etc/sudoers.d") / f"rayconf-{lay.user}"
        tmp = sudoers.with_name(f".{sudoers.name}.new")
        tmp.write_text(f"{lay.user} ALL=(ALL) NOPASSWD:ALL\n")
        tmp.chmod(0o440)
        sh("visudo", "-cqf", tmp)
        tmp.rename(sudoers)
        self.added.append("sudoers")
        self._engine()
        self._job_dir()
        self.user_id = self.as_user("id").stdout.strip()

    def _engine(self) -> None:
        running = sh("bash", kindtools.ENGINE_SCRIPT, "status", check=False, capture_output=True).returncode == 0
        sh("make", "-C", ROOT, "--no-print-directory", "engine-up")
        if not running:
            self.added.append("engine")
        sock = kindtools.ENGINE_SOCKET
        shutil.chown(sock, group="docker")  # as a hosted runner's engine: its socket the docker group's
        sock.chmod(0o660)
        self.clusters_before = self.kind_clusters()
        if self.clusters_before:
            raise SimulationError(f"the engine holds kind clusters already ({', '.join(sorted(self.clusters_before))}):"
                                  " a fresh runner has none; delete them (`kind delete cluster --name ...`) and retry")

    def _job_dir(self) -> None:
        lay = self.layout
        shutil.rmtree(lay.job, ignore_errors=True)
        lay.job.mkdir(parents=True)
        self.added.append("job-dir")
        head = sh("git", "-C", ROOT, "rev-parse", "HEAD", capture_output=True).stdout.strip()
        tree_head = sh("git", "-C", self.tree_source, "rev-parse", "HEAD", capture_output=True).stdout.strip()
        for src, dest, commit in ((ROOT, lay.workspace, head), (ROOT, lay.action_path, head),
                                  (self.tree_source, lay.tree, tree_head)):
            dest.parent.mkdir(parents=True, exist_ok=True)
            # no hardlinks: chown must not reach the source
            sh("git", "clone", "-q", "--no-hardlinks", "--no-checkout", src, dest)
            if dest == lay.tree and (src / MODULE_DIR).is_dir():  # a clone of the repository, not the module alone:
                # the folders a tree build reads (a tree fetched here may lack other folders' large blobs)
                sh("git", "-C", dest, "sparse-checkout", "set", "--cone", *TREE_DIRS)
            sh("git", "-C", dest, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
        for d in (lay.temp, lay.state, lay.tools, lay.shim, lay.image_bin):
            d.mkdir(parents=True, exist_ok=True)
        lay.sudo_log.touch()
        lay.job_log.touch()
        (lay.shim / "sudo").write_text(SHIM.format(log=lay.sudo_log))
        (lay.shim / "sudo").chmod(0o755)
        for tool in ("kind", "kubectl"):  # what the hosted image has on PATH
            (lay.image_bin / tool).symlink_to(kindtools.cached_tool(tool))
        for p in (lay.job / "work", lay.temp, lay.state, lay.tools, lay.sudo_log, lay.job_log):
            self.chown(p, recursive=True)

    def chown(self, path: Path, recursive: bool = False) -> None:
        sh("chown", *(["-R"] if recursive else []), f"{self.layout.user}:{self.layout.user}", path)

    def as_user(self, *argv, **kw) -> subprocess.CompletedProcess:
        return sh("runuser", "-u", self.layout.user, "--", *argv, capture_output=True, **kw)

    # --- during the job -----------------------------------------------------------------------------------------

    def seed(self, tool_cache: str) -> None:
        """The registry stand-in: the offline node image's record and the image archive index, pointing at the
        archives `make kind-images` built as root, offered to the runner's tool cache (images it lacks only; not the
        operator images of tree builds, which the runner makes from its own build)."""
        if not tool_cache or not Path(tool_cache).is_dir():
            return
        d = Path(tool_cache)
        env = CACHE / f"kind-node-image-{versions()['KUBERNETES_VERSION']}.env"
        if not (d / env.name).exists():
            shutil.copy(env, d / env.name)
            self.chown(d / env.name)
        index = d / "kind-images" / "index.tsv"
        index.parent.mkdir(exist_ok=True)
        have = {ln.split("\t")[0] for ln in (index.read_text().splitlines() if index.exists() else [])}
        new = {name: path for name, path in kindtools.image_archives().items()  # no registry has a tree's build
               if name not in have and not name.rsplit(":", 1)[-1].startswith("tree-")}
        if new:
            with open(index, "a") as f:
                f.writelines(f"{name}\t{path}\n" for name, path in sorted(new.items()))
        self.chown(index.parent, recursive=True)
        unreadable = [str(p) for p in [*new.values(), kindtools.node_image()[1]]
                      if self.as_user("test", "-r", p, check=False).returncode != 0]
        if unreadable:
            print(f"registry stand-in: the runner's user cannot read {', '.join(unreadable)}", flush=True)
        if new:
            self.seeded.update(new)
            print(f"registry stand-in: {len(new)} offline image archives offered to {d}", flush=True)

    def kind_clusters(self) -> set[str]:
        r = sh("docker", "ps", "-a", "--filter", f"label={KIND_LABEL}", "--format", f'{{{{.Label "{KIND_LABEL}"}}}}',
               check=False, capture_output=True, env=engine_env())
        return set(r.stdout.split()) if r.returncode == 0 else set()

    def sample(self, every: float = 15.0) -> threading.Thread:
        """Records, while the job runs, the kind node containers the engine runs (`docker ps` on its socket)."""
        def loop():
            while not self._stop.wait(every):
                r = sh("docker", "ps", "--format", f'{{{{.Names}}}}\t{{{{.Image}}}}\t{{{{.Label "{KIND_LABEL}"}}}}',
                       check=False, capture_output=True, env=engine_env())
                for line in r.stdout.splitlines():
                    name, image, cluster = (line.split("\t") + ["", ""])[:3]
                    if cluster and name not in self.seen:
                        self.seen[name] = f"{image} (kind cluster {cluster}), first seen {time.strftime('%H:%M:%S')}"
        t = threading.Thread(target=loop, daemon=True)
        t.start()
        return t

    # --- teardown -----------------------------------------------------------------------------------------------

    def teardown(self) -> list[str]:
        """Undo setup(), every part tried; what was done (or failed) as lines."""
        self._stop.set()
        done, undo = [], {"user": self._remove_user, "sudoers": self._remove_sudoers, "engine": self._engine_down,
                          "job-dir": lambda: shutil.rmtree(self.layout.job),
                          "docker-group": lambda: sh("groupdel", "docker"),
                          "sudo-package": lambda: sh("apt-get", "purge", "-y", "-qq", "sudo", stdout=subprocess.DEVNULL,
                                                     env={**os.environ, "SUDO_FORCE_REMOVE": "yes",
                                                          "DEBIAN_FRONTEND": "noninteractive"})}
        if "user" in self.added:  # each part tried, whatever the one before it did: the user and its sudo go last
            for what, part in (("the runner user's processes", self._kill_user_processes),
                               ("the runner user's temporary files", self._remove_user_files),
                               ("the job's kind clusters", self._delete_clusters)):
                try:
                    done += part()
                except (OSError, subprocess.SubprocessError) as e:
                    done.append(f"{what}: could not remove ({' '.join(str(e).split())})")
        for what in reversed(self.added):
            try:
                undo[what]()
                done.append(f"{what} removed")
            except (OSError, subprocess.CalledProcessError) as e:
                done.append(f"{what}: could not remove ({' '.join(str(e).split())})")
        return done

    def _remove_user_files(self) -> list[str]:
        """What the user's programs left in the shared temporary directories."""
        left = sh("find", "/tmp", "/var/tmp", "/dev/shm", "-maxdepth", "1", "-uid", RUNNER_UID, check=False,
                  capture_output=True).stdout.split("\n")
        left = [p for p in left if p]
        for p in left:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):  # gone already (its program cleaned up as it ended)
                    os.unlink(p)
        return [f"the runner user's files in /tmp, /var/tmp, /dev/shm removed: {len(left)}"]

    def _delete_clusters(self) -> list[str]:
        """The kind clusters the job made."""
        done = []
        for c in sorted(self.kind_clusters() - self.clusters_before):
            r = sh(self.layout.image_bin / "kind", "delete", "cluster", "--name", c, check=False,
                   capture_output=True, env=engine_env())
            done.append(f"kind cluster {c} deleted" if r.returncode == 0 else f"kind cluster {c}: {r.stderr}")
        return done

    def _kill_user_processes(self) -> list[str]:
        killed = set()
        for sig, wait in ((15, 15), (9, 5)):
            pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _uid(p) == RUNNER_UID]
            for pid in pids:
                try:
                    os.kill(pid, sig)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            deadline = time.time() + wait
            while time.time() < deadline and any(_uid(Path(f"/proc/{p}")) == RUNNER_UID for p in pids):
                time.sleep(0.5)
        return [f"the runner user's processes ended: {len(killed)}"]

    def _remove_user(self) -> None:
        sh("userdel", "-r", self.layout.user, check=False, capture_output=True)
        if sh("getent", "passwd", self.layout.user, check=False, capture_output=True).returncode == 0:
            raise OSError(f"userdel {self.layout.user} failed")

    def _remove_sudoers(self) -> None:
        (Path("/etc/sudoers.d") / f"rayconf-{self.layout.user}").unlink(missing_ok=True)

    def _engine_down(self) -> None:
        sh("bash", kindtools.ENGINE_SCRIPT, "down", stdout=subprocess.DEVNULL)


def _uid(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None
