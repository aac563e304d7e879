"""Pod sandboxes: network namespace on the node's bridge, and the mount/UTS/IPC namespaces held by a pause process.

Network (iproute2, no CNI): node i has bridge `rcbr<i>` with the first address of its podCIDR as the Pods'
gateway; each Pod gets netns `rc-<uid12>` with `eth0`, whose host end is veth `rcv<uid12>` on the bridge
(hairpin on, so a Pod reaches itself through a Service). Addresses come from the node's podCIDR, handed out
round-robin so a released address is not reused at once. No masquerading: Pod traffic never leaves the host
(the guard in network.py drops anything heading elsewhere).

Pause: `nsenter --net=<netns> unshare --mount --uts --ipc` runs cinit.py in pause mode, which sets the hostname,
gives the Pod a private /dev/shm (64 MiB tmpfs), mounts Memory emptyDirs as tmpfs, then becomes `sleep infinity`.
(The Pod's private /tmp, a directory in its state dir, is bound by each container's cinit.) Every mount lives only in the Pod's mount namespace, so it
vanishes with the Pod's processes; the one host-side mount per Pod is the netns file in /run/netns.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import procutil
from ..section import LocalSection, NodeDef

log = logging.getLogger("nodeagent.sandbox")
MARKER = "RAYCONFORMANCE_POD"  # env var carried by every process of a Pod (uid): the sweep finds strays by it
CINIT = Path(__file__).resolve().parent / "cinit.py"
NETNS_PREFIX, VETH_PREFIX, BRIDGE_PREFIX = "rc-", "rcv", "rcbr"


class SandboxError(RuntimeError):
    pass


def ip(*args: str, netns: str | None = None, batch: list[str] | None = None, check: bool = True):
    argv = ["ip"] + (["-n", netns] if netns else []) + (["-batch", "-"] if batch is not None else list(args))
    r = subprocess.run(argv, input="\n".join(batch or []) + "\n" if batch is not None else None,
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SandboxError(f"{' '.join(argv)} {batch or ''}: {r.stderr.strip()}")
    return r


def short(uid: str) -> str:
    return uid.replace("-", "")[:12]


def bridge_name(node: NodeDef) -> str:
    return f"{BRIDGE_PREFIX}{node.index}"


class Network:
    """Bridges per node and Pod address management (persisted in the agent's store)."""

    def __init__(self, defn: LocalSection, store):
        self.defn = defn
        self.store = store
        self._lock = threading.Lock()
        self.ipam: dict = store.table("ipam", {})

    def gateway(self, node: NodeDef) -> str:
        return str(next(ipaddress.ip_network(self.defn.node_pod_cidr(node)).hosts()))

    def ensure_bridges(self) -> None:
        for node in self.defn.nodes:
            br = bridge_name(node)
            if ip("link", "show", br, check=False).returncode != 0:
                ip("link", "add", br, "type", "bridge")
            prefix = ipaddress.ip_network(self.defn.node_pod_cidr(node)).prefixlen
            addr = f"{self.gateway(node)}/{prefix}"
            if addr not in ip("-o", "addr", "show", "dev", br).stdout:
                ip("addr", "add", addr, "dev", br)
            ip("link", "set", br, "up")
        # bridged Pod-to-Pod replies must pass conntrack for Service DNAT to work (kube-proxy relies on it)
        p = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        if p.exists() and p.read_text().strip() != "1":
            p.write_text("1")

    def allocate(self, node: NodeDef, uid: str) -> str:
        with self._lock:
            t = self.ipam.setdefault(node.name, {"cursor": 0, "ips": {}})
            for known, owner in t["ips"].items():
                if owner == uid:
                    return known
            hosts = list(ipaddress.ip_network(self.defn.node_pod_cidr(node)).hosts())[1:]  # [0] is the gateway
            for step in range(len(hosts)):
                i = (t["cursor"] + step) % len(hosts)
                cand = str(hosts[i])
                if cand not in t["ips"]:
                    t["ips"][cand] = uid
                    t["cursor"] = i + 1
                    self.store.save_table("ipam", self.ipam)
                    return cand
            raise SandboxError(f"node {node.name}: no free Pod address in {self.defn.node_pod_cidr(node)}")

    def release(self, uid: str) -> None:
        with self._lock:
            changed = False
            for t in self.ipam.values():
                for a in [a for a, o in t["ips"].items() if o == uid]:
                    del t["ips"][a]
                    changed = True
            if changed:
                self.store.save_table("ipam", self.ipam)

    def plumb(self, node: NodeDef, uid: str, addr: str) -> str:
        ns, veth = NETNS_PREFIX + short(uid), VETH_PREFIX + short(uid)
        self.unplumb(uid)
        prefix = ipaddress.ip_network(self.defn.node_pod_cidr(node)).prefixlen
        ip("netns", "add", ns)
        ip(batch=[f"link add {veth} type veth peer name eth0 netns {ns}",
                  f"link set {veth} master {bridge_name(node)}",
                  f"link set dev {veth} type bridge_slave hairpin on",
                  f"link set {veth} up"])
        ip(netns=ns, batch=["link set lo up", f"addr add {addr}/{prefix} dev eth0", "link set eth0 up",
                            f"route add default via {self.gateway(node)}"])
        return ns

    @staticmethod
    def unplumb(uid: str) -> None:
        ns, veth = NETNS_PREFIX + short(uid), VETH_PREFIX + short(uid)
        if Path(f"/run/netns/{ns}").exists():
            ip("netns", "del", ns, check=False)
        if Path(f"/sys/class/net/{veth}").exists():
            ip("link", "del", veth, check=False)


def hosts_file(pod: dict, addr: str, hostname: str) -> str:
    spec = pod["spec"]
    lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix",
             "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
    if not spec.get("hostNetwork"):
        sub = spec.get("subdomain")
        if sub:
            ns = pod["metadata"]["namespace"]
            lines.append(f"{addr}\t{hostname}.{sub}.{ns}.svc.cluster.local\t{hostname}")
        else:
            lines.append(f"{addr}\t{hostname}")
    for alias in spec.get("hostAliases") or []:
        lines.append("# Entries added by HostAliases.")
        lines.append(f"{alias['ip']}\t" + "\t".join(alias.get("hostnames") or []))
    return "\n".join(lines) + "\n"


def resolv_conf(pod: dict, dns_address: str) -> str:
    """ClusterFirst as a kubelet writes it. `Default` would be the host's resolver, which Pods must never use
    here (nothing may leave the machine), so it gets the cluster DNS without search domains instead."""
    spec = pod["spec"]
    ns = pod["metadata"]["namespace"]
    policy = spec.get("dnsPolicy", "ClusterFirst")
    if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not spec.get("hostNetwork")):
        servers, search, options = [dns_address], [f"{ns}.svc.cluster.local", "svc.cluster.local",
                                                   "cluster.local"], {"ndots": "5"}
    elif policy == "None":
        servers, search, options = [], [], {}
    else:
        servers, search, options = [dns_address], [], {}
    cfg = spec.get("dnsConfig") or {}
    servers += [s for s in cfg.get("nameservers") or [] if s not in servers]
    search += [s for s in cfg.get("searches") or [] if s not in search]
    for o in cfg.get("options") or []:
        options[o["name"]] = o.get("value")
    out = [f"nameserver {s}" for s in servers[:3]]
    if search:
        out.append("search " + " ".join(search[:32]))
    if options:
        out.append("options " + " ".join(k if v is None else f"{k}:{v}" for k, v in options.items()))
    return "\n".join(out) + "\n"


def pod_hostname(pod: dict) -> str:
    return (pod["spec"].get("hostname") or pod["metadata"]["name"])[:63].rstrip("-.")


class Sandbox:
    """One Pod's namespaces. `record` (a dict) is what survives an agent restart."""

    def __init__(self, pod_dir: Path, uid: str, record: dict | None = None):
        self.dir = pod_dir
        self.uid = uid
        self.rec = record or {}
        self._proc: subprocess.Popen | None = None

    @property
    def ip(self) -> str | None:
        return self.rec.get("ip")

    @property
    def pause_pid(self) -> int | None:
        return self.rec.get("pause_pid")

    def alive(self) -> bool:
        return procutil.same_process(self.rec.get("pause_pid"), self.rec.get("pause_start"))

    def create(self, pod: dict, node: NodeDef, net: Network, dns_address: str, host_address: str,
               memory_volumes: list[dict], shm_size: int) -> None:
        host_net = bool(pod["spec"].get("hostNetwork"))
        (self.dir / "etc").mkdir(parents=True, exist_ok=True)
        (self.dir / "tmp").mkdir(exist_ok=True)
        (self.dir / "tmp").chmod(0o1777)
        if host_net:
            addr, netns = host_address, None
        else:
            addr = net.allocate(node, self.uid)
            netns = net.plumb(node, self.uid, addr)
        self.rec.update(ip=addr, netns=netns)
        hostname = pod_hostname(pod)
        (self.dir / "etc" / "hosts").write_text(hosts_file(pod, addr, hostname))
        (self.dir / "etc" / "resolv.conf").write_text(resolv_conf(pod, dns_address))
        (self.dir / "etc" / "hostname").write_text(hostname + "\n")
        spec = {"hostname": None if host_net else hostname, "shm_size": shm_size, "tmpfs": memory_volumes}
        spec_path = self.dir / "pause.json"
        spec_path.write_text(json.dumps(spec))
        argv = (["nsenter", f"--net=/run/netns/{netns}", "--"] if netns else []) + [
            "unshare", "--mount", "--ipc", "--propagation", "private"] + ([] if host_net else ["--uts"]) + [
            "--", sys.executable, "-I", str(CINIT), "pause", str(spec_path)]
        errlog = open(self.dir / "pause.log", "ab")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog,
                                 start_new_session=True, env={"PATH": os.environ.get("PATH", ""), MARKER: self.uid},
                                 cwd="/")
        finally:
            errlog.close()
        self._proc = p
        ready, _, _ = select.select([p.stdout], [], [], 20)
        line = p.stdout.readline().decode().strip() if ready else ""
        p.stdout.close()
        if line != "ready":
            procutil.kill(p.pid)
            p.wait()
            err = (self.dir / "pause.log").read_text(errors="replace").strip()[-400:]
            raise SandboxError(f"pod sandbox did not start: {err or 'no output'}")
        self.rec.update(pause_pid=p.pid, pause_start=procutil.start_time(p.pid), created=time.time())

    def namespaces(self) -> list[str]:
        """The Pod's shared namespaces a container joins (mount last: joining it changes the root)."""
        return ["ipc"] + (["net", "uts"] if self.rec.get("netns") else []) + ["mnt"]

    def destroy(self, net: Network) -> None:
        pid = self.rec.get("pause_pid")
        if pid and procutil.same_process(pid, self.rec.get("pause_start")):
            procutil.kill(pid)
            procutil.wait_gone(pid, self.rec.get("pause_start"), 5)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        if self.rec.get("netns"):
            # anything still inside the netns is ours: kill it before removing the namespace
            r = ip("netns", "pids", self.rec["netns"], check=False)
            for p in r.stdout.split():
                procutil.kill(int(p))
            Network.unplumb(self.uid)
        net.release(self.uid)
        self.rec.update(pause_pid=None, pause_start=None)

    def remove_files(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
