"""Host side of the test bed's network: the host address bridge and the guard that keeps every packet local.

The guard (design §5): pod, service and host-address ranges may only use the test bed's own interfaces
(loopback, `rc-host`, node bridges `rcbr*`, pod veths `rcv*`); forwarding between pods stays between pods;
anything else towards those ranges is dropped before it can reach an uplink. A Pod's packet to anywhere outside
the bed is refused at once (ICMP administratively prohibited), as a node with no way out answers, rather than
dropped: dropping made every connection attempt wait out its client's timeout (Ray's dashboard probes the cloud
metadata address on start and answered its first health check 2 s late).
"""
from __future__ import annotations

import ipaddress
import subprocess

HOST_IF = "rc-host"
GUARD_OUT = "RAYCONF-GUARD-OUT"
GUARD_FWD = "RAYCONF-GUARD-FWD"
OUR_IFACES = ("lo", HOST_IF, "rcbr+", "rcv+")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {r.stderr.strip() or r.stdout.strip()}")
    return r


def host_network(host_address: str) -> str:
    return str(ipaddress.ip_network(f"{host_address}/24", strict=False))


def up(host_address: str, dns_address: str, pod_cidr: str, service_cidr: str) -> None:
    sh("ip", "link", "add", HOST_IF, "type", "bridge")
    sh("ip", "addr", "add", f"{host_address}/24", "dev", HOST_IF)
    sh("ip", "addr", "add", f"{dns_address}/32", "dev", HOST_IF)
    sh("ip", "link", "set", HOST_IF, "up")
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1")
    for chain, hook in ((GUARD_OUT, "OUTPUT"), (GUARD_FWD, "FORWARD")):
        sh("iptables", "-w", "-N", chain)
        sh("iptables", "-w", "-I", hook, "1", "-j", chain)
    ranges = (pod_cidr, service_cidr, host_network(host_address))
    for iface in OUR_IFACES:
        sh("iptables", "-w", "-A", GUARD_OUT, "-o", iface, "-j", "RETURN")
    for net in ranges:
        sh("iptables", "-w", "-A", GUARD_OUT, "-d", net, "-j", "DROP")
    # Pods talk to pods (and to the host itself, which is INPUT, not FORWARD); nothing else is forwarded.
    sh("iptables", "-w", "-A", GUARD_FWD, "-s", pod_cidr, "-d", pod_cidr, "-j", "ACCEPT")
    sh("iptables", "-w", "-A", GUARD_FWD, "-s", pod_cidr, "-j", "REJECT", "--reject-with", "icmp-admin-prohibited")
    sh("iptables", "-w", "-A", GUARD_FWD, "-d", pod_cidr, "-j", "DROP")


def down() -> None:
    """Idempotent: removes the guard chains and the host interface if they exist."""
    for chain, hook in ((GUARD_OUT, "OUTPUT"), (GUARD_FWD, "FORWARD")):
        while sh("iptables", "-w", "-D", hook, "-j", chain, check=False).returncode == 0:
            pass
        sh("iptables", "-w", "-F", chain, check=False)
        sh("iptables", "-w", "-X", chain, check=False)
    sh("ip", "link", "del", HOST_IF, check=False)


def leftovers() -> list[str]:
    """What of ours is still on the host (for leak tests and the before-stop check)."""
    out = []
    links = sh("ip", "-o", "link", "show", check=False).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name == HOST_IF or name.startswith(("rcbr", "rcv")):
            out.append(f"link {name}")
    rules = sh("iptables-save", check=False).stdout
    out += [f"iptables {line}" for line in rules.splitlines() if "RAYCONF" in line]
    netns = sh("ip", "netns", "list", check=False).stdout
    out += [f"netns {line.split()[0]}" for line in netns.splitlines() if line.startswith("rc-")]
    return out
