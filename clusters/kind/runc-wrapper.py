#!/usr/bin/python3
"""An OCI runtime wrapper for the project's Docker engine: drops the capabilities this machine cannot grant.

Docker 20.10 (Debian's docker.io) asks for every capability it knows for `--privileged` containers and
`docker exec --privileged`; where the machine's capability bounding set lacks one (CAP_SYS_RESOURCE on
these machines), runc fails with "unable to apply caps: operation not permitted". Registered with
`dockerd --add-runtime`, this removes every capability outside our own bounding set from the bundle's
`config.json` (create/run) or the `--process` file (exec), then execs the real runc with the same arguments.
"""
import json
import os
import sys

REAL = os.environ.get("RAYCONF_REAL_RUNC", "/usr/sbin/runc")
CAPS = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
        "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT "
        "SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
        "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ "
        "PERFMON BPF CHECKPOINT_RESTORE").split()


def missing_caps() -> set[str]:
    """CAP_* names the kernel knows (up to CAP_LAST_CAP) that are not in this process's bounding set."""
    with open("/proc/self/status") as f:
        bnd = int(next(ln.split()[1] for ln in f if ln.startswith("CapBnd:")), 16)
    return {"CAP_" + n for i, n in enumerate(CAPS) if not bnd >> i & 1}


def strip(path: str, drop: set[str], process_only: bool) -> None:
    with open(path) as f:
        spec = json.load(f)
    proc = spec if process_only else spec.get("process", {})
    caps = proc.get("capabilities") or {}
    if not any(set(v or ()) & drop for v in caps.values()):
        return
    for k, v in caps.items():
        caps[k] = [c for c in v or () if c not in drop]
    with open(path, "w") as f:
        json.dump(spec, f)


def option(args: list[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def main(args: list[str]) -> None:
    drop = missing_caps()
    if drop:
        cmd = next((a for a in args if a in ("create", "run", "exec")), None)
        if cmd in ("create", "run"):
            bundle = option(args, "--bundle", "-b") or os.getcwd()
            strip(os.path.join(bundle, "config.json"), drop, process_only=False)
        elif cmd == "exec":
            process = option(args, "--process", "-p")
            if process:
                strip(process, drop, process_only=True)
    os.execv(REAL, [REAL, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
