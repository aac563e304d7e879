"""A container's identity and privileges (from its image and securityContext), and what a Pod asks that the local
test bed does not honor.

Honored, as a container runtime does it:
    user       the image's USER (image rule `user`), overridden by runAsUser/runAsGroup (container, then Pod);
               supplementary groups = the primary group + Pod `supplementalGroups` + `fsGroup`
    runAsNonRoot   a container that would run as uid 0 is refused (CreateContainerConfigError), as a kubelet does
    capabilities   the runtime's default set (containerd's) + `add` - `drop` (`ALL` supported) as the bounding set;
               root gets that set, a non-root user none (no ambient capabilities, as with containerd);
               `privileged` keeps every capability the host has
    allowPrivilegeEscalation: false   no_new_privs

Everything else a Pod may ask for and the bed cannot give is listed by `not_honored`, and the node agent posts it
as one Warning event (reason NotHonored) when it admits the Pod; the node agent's README lists the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
        "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
        "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
        "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
        "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
        "CHECKPOINT_RESTORE"]
CAP_NUM = {n: i for i, n in enumerate(CAPS)}
# containerd's CRI default set (what a container running as root gets unless it adds or drops)
DEFAULT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID", "SETFCAP",
                "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE")


class SecurityError(RuntimeError):
    """The container must not start as asked (CreateContainerConfigError)."""


@dataclass
class Identity:
    uid: int
    gid: int
    groups: list[int] = field(default_factory=list)
    caps: list[int] | None = None  # the bounding set; None = every capability (privileged)
    no_new_privs: bool = False

    def to_spec(self) -> dict:
        return {"uid": self.uid, "gid": self.gid, "groups": self.groups, "caps": self.caps,
                "no_new_privs": self.no_new_privs}


def host_caps() -> set[str]:
    """Names of the capabilities in this process's bounding set (what the host can give a container)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                mask = int(line.split()[1], 16)
                return {n for i, n in enumerate(CAPS) if mask >> i & 1}
    except OSError:
        pass
    return set(CAPS)


def _cap(name: str) -> str:
    n = name.upper()
    return n[4:] if n.startswith("CAP_") else n


def identity(pod: dict, spec: dict, image_uid: int, image_gid: int, have: set[str] | None = None) -> Identity:
    psc = pod["spec"].get("securityContext") or {}
    csc = spec.get("securityContext") or {}
    uid = csc.get("runAsUser", psc.get("runAsUser", image_uid))
    gid = csc.get("runAsGroup", psc.get("runAsGroup", image_gid if uid == image_uid else 0))
    non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    if non_root and int(uid) == 0:
        if "runAsUser" in csc or "runAsUser" in psc:
            raise SecurityError("container's runAsUser breaks non-root policy (pod: "
                                f"\"{pod['metadata']['name']}_{pod['metadata']['namespace']}\", container: {spec['name']})")
        raise SecurityError("container has runAsNonRoot and image will run as root (pod: "
                            f"\"{pod['metadata']['name']}_{pod['metadata']['namespace']}\", container: {spec['name']})")
    groups = [int(gid)]
    for g in list(psc.get("supplementalGroups") or []) + ([psc["fsGroup"]] if psc.get("fsGroup") is not None else []):
        if int(g) not in groups:
            groups.append(int(g))
    have = host_caps() if have is None else have
    if csc.get("privileged"):
        caps = None
    else:
        c = csc.get("capabilities") or {}
        drop = {_cap(x) for x in c.get("drop") or []}
        add = {_cap(x) for x in c.get("add") or []}
        names = set() if "ALL" in drop else set(DEFAULT_CAPS) - drop
        names |= set(CAPS) if "ALL" in add else add
        caps = sorted(CAP_NUM[n] for n in names & have if n in CAP_NUM)
    return Identity(int(uid), int(gid), groups, caps, csc.get("allowPrivilegeEscalation") is False)


def not_honored(pod: dict, have: set[str] | None = None) -> list[str]:
    """What the Pod asks for that the local test bed does not honor (empty if nothing)."""
    spec = pod["spec"]
    have = host_caps() if have is None else have
    out: list[str] = []
    psc = spec.get("securityContext") or {}
    for key in ("hostPID", "hostIPC", "shareProcessNamespace"):
        if spec.get(key):
            out.append(f"{key} (each container has its own PID and the Pod its own IPC namespace)")
    if psc.get("sysctls"):
        out.append("securityContext.sysctls " + ",".join(s["name"] for s in psc["sysctls"]))
    out += _sc_unhonored("securityContext", psc)
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            where = f"{kind}[{c['name']}]"
            csc = c.get("securityContext") or {}
            out += _sc_unhonored(f"{where}.securityContext", csc)
            if csc.get("readOnlyRootFilesystem"):
                out.append(f"{where}.securityContext.readOnlyRootFilesystem (containers share the host's root "
                           "filesystem)")
            add = {_cap(x) for x in (csc.get("capabilities") or {}).get("add") or []} - {"ALL"}
            missing = sorted(a for a in add if a not in have)
            if missing and not csc.get("privileged"):
                out.append(f"{where}.securityContext.capabilities.add {','.join(missing)} (the host has none to give)")
            lim = (c.get("resources") or {}).get("limits") or {}
            enforced = sorted(k for k in lim if k in ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi"))
            if enforced:
                out.append(f"{where}.resources.limits {','.join(enforced)} (not enforced: no cgroups, no OOMKilled)")
            for p in ("livenessProbe", "readinessProbe", "startupProbe"):
                if "grpc" in (c.get(p) or {}):
                    out.append(f"{where}.{p}.grpc (gRPC probes always fail)")
            if c.get("restartPolicyRules"):
                out.append(f"{where}.restartPolicyRules (only the container's own restartPolicy is honored)")
            for port in c.get("ports") or []:
                if port.get("hostPort"):
                    out.append(f"{where}.ports hostPort {port['hostPort']} (no host port mapping)")
    return out


def _sc_unhonored(where: str, sc: dict) -> list[str]:
    out = []
    sp = (sc.get("seccompProfile") or {}).get("type")
    if sp and sp != "Unconfined":
        out.append(f"{where}.seccompProfile {sp} (no seccomp filter)")
    ap = (sc.get("appArmorProfile") or {}).get("type")
    if ap and ap != "Unconfined":
        out.append(f"{where}.appArmorProfile {ap} (no AppArmor)")
    if sc.get("seLinuxOptions"):
        out.append(f"{where}.seLinuxOptions (no SELinux)")
    if sc.get("procMount") == "Unmasked":
        out.append(f"{where}.procMount Unmasked")
    return out
