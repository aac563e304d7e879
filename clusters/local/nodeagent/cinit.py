"""Runs inside a Pod's namespaces, before the real program: sets up mounts, then execs. Standard library only.

    cinit.py pause <spec.json>  in the Pod's fresh mount/UTS/IPC namespaces (inside its netns): set the hostname,
                                give the Pod a private /dev/shm, mount Memory emptyDirs, print "ready", then exec
                                `sleep infinity` (the sandbox holder)
    cinit.py shim <spec.json>   one run of a container: join the Pod's namespaces (those of its pause process),
                                unshare a new PID and mount namespace, fork the container's PID 1 and wait for it;
                                write its exit status (128+signal if killed) to a file, so the status survives an
                                agent restart. PID 1 binds the Pod's private /tmp, the volumes, /etc/hosts and
                                /etc/resolv.conf, chdirs and execs the command. Bind sources are opened first, so a
                                hostPath under the host's /tmp still means the host's /tmp.

Mount targets that do not exist on the host are never created in the host's tree when avoidable: a target under
a Pod-private directory (/tmp, /dev/shm, a mounted volume) is created there; otherwise an overlay (upper layer in
the Pod's state dir) is mounted on the nearest existing ancestor inside this mount namespace, and the target is
created in the overlay. Only a missing top-level directory (e.g. /data) must be created on the host; such paths
are recorded in a registry file so teardown removes them.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    r = _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                    data.encode() if data else None)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {source} -> {target} ({fstype or 'bind'}): {os.strerror(e)}")


def bind(source: str, target: str, readonly: bool = False) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    if readonly:
        mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def pause(spec: dict) -> None:
    if spec.get("hostname"):
        socket.sethostname(spec["hostname"])
    mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={int(spec.get('shm_size', 64 << 20))}")
    for t in spec.get("tmpfs", []):
        os.makedirs(t["path"], exist_ok=True)
        opts = "mode=0777" + (f",size={int(t['size'])}" if t.get("size") else "")
        mount("tmpfs", t["path"], "tmpfs", MS_NOSUID | MS_NODEV, opts)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execvp("sleep", ["sleep", "infinity"])


class Targets:
    """Creates mount targets without touching the host's tree (see the module doc)."""

    def __init__(self, spec: dict):
        self.private = list(spec.get("private_roots", ["/tmp", "/dev/shm"]))
        self.registry = spec.get("host_registry")
        ovl = spec["overlay_dir"]
        os.makedirs(ovl, exist_ok=True)
        self.ovl_fd = os.open(ovl, os.O_PATH)  # usable after overlays hide the path itself
        self.n = 0
        self.done: list[tuple[int, str, bool]] = []  # binds made so far: (source fd, target, readonly)

    def _under_private(self, path: str) -> bool:
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.private)

    def _overlay(self, lower: str) -> None:
        base = f"/proc/self/fd/{self.ovl_fd}/{self.n}"
        self.n += 1
        os.makedirs(f"{base}/upper")
        os.makedirs(f"{base}/work")
        up, wk = os.open(f"{base}/upper", os.O_PATH), os.open(f"{base}/work", os.O_PATH)
        esc = lower.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")
        mount("overlay", lower, "overlay", 0, f"lowerdir={esc},upperdir=/proc/self/fd/{up},workdir=/proc/self/fd/{wk}")
        self.private.append(lower)
        # the overlay hides binds made earlier below `lower`: make them again on top of it
        for fd, target, ro in self.done:
            if target.startswith(lower.rstrip("/") + "/"):
                self.ensure(target, os.path.isdir(f"/proc/self/fd/{fd}"))
                bind(f"/proc/self/fd/{fd}", target, ro)

    def _record(self, path: str) -> None:
        if self.registry:
            os.makedirs(os.path.dirname(self.registry), exist_ok=True)
            with open(self.registry, "a") as f:
                f.write(path + "\n")

    def ensure(self, target: str, is_dir: bool) -> str:
        parts = [p for p in target.split("/") if p]
        cur, rest = "/", []
        for i, comp in enumerate(parts):
            nxt = os.path.join(cur, comp)
            if os.path.lexists(nxt):
                cur = os.path.realpath(nxt)
            else:
                rest = parts[i:]
                break
        if not rest:
            return cur
        host = False
        if not self._under_private(cur):
            if cur == "/":
                host = True
            else:
                self._overlay(cur)
        path = cur
        for i, comp in enumerate(rest):
            path = os.path.join(path, comp)
            last = i == len(rest) - 1
            if host:
                self._record(path)
            if last and not is_dir:
                open(path, "a").close()
            else:
                os.makedirs(path, exist_ok=True)
        return path


def _check(r: int, what: str) -> None:
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def shim(spec: dict) -> None:
    """Parent side of one container run (see the module doc); never returns."""
    pause = spec["pause_pid"]
    try:
        for ns in spec["join"]:  # mount last: it changes the root
            fd = os.open(f"/proc/{pause}/ns/{ns}", os.O_RDONLY)
            _check(_libc.setns(fd, 0), f"setns {ns} of pid {pause}")
            os.close(fd)
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare")
        mount("none", "/", None, MS_REC | MS_PRIVATE)
    except OSError as e:
        _write_exit(spec["exit_file"], 128)
        _start_error(spec.get("start_error_file"), f"failed to create containerd task: {e}")
    pid = os.fork()
    if pid == 0:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # (getppid() is 0 here: the shim is outside our PID ns)
        try:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as e:
            _start_error(spec.get("start_error_file"), f"failed to create containerd task: {e}")
        container(spec)
        os._exit(128)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # only the container's PID 1 is signalled; the shim outlives it
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    _write_exit(spec["exit_file"], code)
    os._exit(code & 0xFF)


def _write_exit(path: str, code: int) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(f"{code}\n")
    os.replace(path + ".tmp", path)


def container(spec: dict) -> None:
    err_file = spec.get("start_error_file")
    try:
        targets = Targets(spec)
        mounts = spec.get("mounts", [])
        user = spec.get("user") or {}
        owner = (int(user.get("uid", 0)), int(user.get("gid", 0)))
        # directories the image would have (working directory, home with its files) that the host lacks: created
        # below, then owned by the container's user as in the image (never a mount target or what is under one)
        cwd = spec.get("cwd") or "/"
        owned = _missing_dirs(cwd)
        for path in spec.get("files") or {}:
            owned += _missing_dirs(os.path.dirname(path)) + [path]
        mounted = [os.path.normpath(m["target"]) for m in mounts]
        owned = [p for p in dict.fromkeys(owned) if not any(p == t or p.startswith(t.rstrip("/") + "/")
                                                             for t in mounted)]
        # open every source before any overlay can hide it (sources live under the Pod's state dir)
        fds = [os.open(m["source"], os.O_PATH) for m in mounts]
        order = sorted(range(len(mounts)), key=lambda i: len([p for p in mounts[i]["target"].split("/") if p]))
        for i in order:
            m = mounts[i]
            is_dir = os.path.isdir(f"/proc/self/fd/{fds[i]}")
            target = targets.ensure(m["target"], is_dir)
            bind(f"/proc/self/fd/{fds[i]}", target, bool(m.get("readonly")))
            targets.done.append((fds[i], target, bool(m.get("readonly"))))
            if is_dir:
                targets.private.append(target)
        for path, content in (spec.get("files") or {}).items():
            targets.ensure(os.path.dirname(path), True)
            if not os.path.lexists(path):
                with open(path, "w") as f:
                    f.write(content)
        cwd = targets.ensure(cwd, True)
        _chown([p for p in owned if os.path.lexists(p)], owner)
        os.chdir(cwd)
        for fd in fds:
            os.close(fd)
        env = spec["env"]
        argv = spec["argv"]
        if not argv:
            raise FileNotFoundError("no command specified (neither the Pod nor the image rule gives one)")
        if user:
            become(user)
    except Exception as e:  # a kubelet reports these as StartError / exit code 128
        _start_error(err_file, f"failed to create containerd task: {e}")
        return
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # Python changed these; a container starts clean
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        _start_error(err_file, f'exec: "{argv[0]}": {e.strerror or e}')


PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38


def _missing_dirs(path: str) -> list[str]:
    """The directories of `path` (itself included) that do not exist yet, outermost first."""
    out = []
    while path not in ("/", "") and not os.path.lexists(path):
        out.insert(0, path)
        path = os.path.dirname(path)
    return out


def _chown(paths: list[str], owner: tuple[int, int]) -> None:
    if owner != (0, 0):
        for p in paths:
            os.lchown(p, *owner)


def become(user: dict) -> None:
    """Drop to the container's identity: bounding capability set, no_new_privs, groups, gid, uid (in that order:
    dropping capabilities needs CAP_SETPCAP, which setuid to a non-root uid clears). On exec, root gets the
    bounding set; any other uid gets no capabilities."""
    caps = user.get("caps")
    if caps is not None:
        keep = set(caps)
        try:
            with open("/proc/sys/kernel/cap_last_cap") as f:
                last = int(f.read())
        except OSError:
            last = 40
        for cap in range(last + 1):
            if cap not in keep:
                _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    if user.get("no_new_privs"):
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    os.setgroups([int(g) for g in user.get("groups") or [int(user.get("gid", 0))]])
    os.setgid(int(user.get("gid", 0)))
    os.setuid(int(user.get("uid", 0)))


def _start_error(path: str | None, msg: str) -> None:
    if path:
        try:
            with open(path, "w") as f:
                f.write(msg)
        except OSError:
            pass
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()
    os._exit(128)


def main() -> None:
    mode, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    if mode == "pause":
        pause(spec)
    elif mode == "shim":
        shim(spec)
    else:
        sys.exit(f"cinit: unknown mode {mode}")


if __name__ == "__main__":
    main()
