"""Service routing of the local test bed: the real kube-proxy (iptables mode), one for all Nodes.

Every node shares the host network namespace, so one kube-proxy (named after the first Node) programs ClusterIPs
for Pods (PREROUTING, via the bridges) and for the host (OUTPUT). It is told not to touch host-wide sysctls
(conntrack limits and timeouts, route_localnet) and to serve NodePorts only on the host address. `stop` ends it
and runs `kube-proxy --cleanup`, which removes its KUBE-* chains (idempotent).

The Service CIDR is routed to the host interface (`rc-host`, a dummy): the host's first route lookup for a
ClusterIP then no longer picks the uplink. That matters because iptables matches `-o` against the interface of
that first lookup even after kube-proxy's DNAT re-routes the packet, so the network guard would otherwise drop
host -> ClusterIP traffic; and a ClusterIP nobody DNATs now dies on the dummy instead of heading for the uplink.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from . import controlplane, network, procs
from .section import LocalSection
from ..toolcache import tool

NAME = "kube-proxy"
HEALTHZ = "127.0.0.1:10256"
METRICS = "127.0.0.1:10249"


class ProxyError(RuntimeError):
    pass


def start(defn: LocalSection, state: Path, timeout: float = 60.0) -> None:
    binary = tool("kubernetes", "kube-proxy")
    if not binary.exists():
        raise ProxyError(f"{binary} is missing: run `bash clusters/local/build-tools.sh kubernetes`")
    host_net = ".".join(defn.host_address.split(".")[:3]) + ".0/24"
    network.sh("ip", "route", "replace", defn.service_cidr, "dev", network.HOST_IF)
    procs.spawn(state, NAME, [
        str(binary), f"--kubeconfig={state / 'kube-proxy.kubeconfig'}", "--proxy-mode=iptables",
        f"--cluster-cidr={defn.pod_cidr}", f"--hostname-override={defn.nodes[0].name}",
        "--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0s",
        "--conntrack-tcp-timeout-close-wait=0s", "--iptables-localhost-nodeports=false",
        f"--nodeport-addresses={host_net}", f"--metrics-bind-address={METRICS}",
        f"--healthz-bind-address={HEALTHZ}",
    ])
    # /healthz answers 503 until the first full sync of the rules
    controlplane.wait_healthy(state, NAME, f"http://{HEALTHZ}/healthz", None, timeout)


def stop(defn: LocalSection | None, state: Path) -> None:
    procs.stop(state, NAME)
    if defn is not None:
        network.sh("ip", "route", "del", defn.service_cidr, "dev", network.HOST_IF, check=False)
    binary = tool("kubernetes", "kube-proxy")
    if binary.exists():
        subprocess.run([str(binary), "--cleanup"], capture_output=True, timeout=60)
    remove_kube_chains()


def remove_kube_chains() -> list[str]:
    """Whatever KUBE-* iptables state `--cleanup` leaves (it keeps KUBE-FIREWALL and its jumps) goes too."""
    removed = []
    for table in ("filter", "nat", "mangle", "raw"):
        dump = subprocess.run(["iptables-save", "-t", table], capture_output=True, text=True).stdout
        chains = [line[1:].split()[0] for line in dump.splitlines() if line.startswith(":KUBE-")]
        for line in dump.splitlines():
            parts = shlex.split(line)
            if line.startswith("-A ") and not parts[1].startswith("KUBE-") and "-j" in parts and \
                    parts[parts.index("-j") + 1].startswith("KUBE-"):
                subprocess.run(["iptables", "-w", "-t", table, "-D", *parts[1:]], capture_output=True)
                removed.append(f"{table}: {line}")
        for chain in chains:
            subprocess.run(["iptables", "-w", "-t", table, "-F", chain], capture_output=True)
        for chain in chains:
            if subprocess.run(["iptables", "-w", "-t", table, "-X", chain], capture_output=True).returncode == 0:
                removed.append(f"{table}: chain {chain}")
    return removed
