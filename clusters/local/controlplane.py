"""The real Kubernetes control plane of the local test bed: etcd, kube-apiserver, controller-manager, scheduler.

Every component is a binary built by `build-tools.sh` into the versioned cache, run as a host process.
Readiness is polled on each component's health endpoint, never slept for.
"""
from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from . import certs, procs
from .section import LocalSection
from ..toolcache import tool

ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
APISERVER_PORT = 6443
KCM_PORT = 10257
SCHEDULER_PORT = 10259
COMPONENTS = ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")  # stop order


class ControlPlaneError(RuntimeError):
    pass


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_prerequisites(defn: LocalSection) -> None:
    missing = [str(p) for p in (tool("etcd", "etcd"), *(tool("kubernetes", b) for b in
               ("kube-apiserver", "kube-controller-manager", "kube-scheduler"))) if not p.exists()]
    if missing:
        raise ControlPlaneError(f"test-bed binaries missing ({', '.join(Path(m).name for m in missing)}): "
                                f"run `make tools` first")
    for host, port, what in (("127.0.0.1", ETCD_CLIENT_PORT, "etcd"), ("127.0.0.1", ETCD_PEER_PORT, "etcd peer"),
                             ("127.0.0.1", KCM_PORT, "controller-manager"), ("127.0.0.1", SCHEDULER_PORT, "scheduler")):
        if not port_free(host, port):
            raise ControlPlaneError(f"port {port} ({what}) is in use on {host}: stop whatever listens there "
                                    f"(`ss -ltnp 'sport = :{port}'`) or run `make down`")


def _get(url: str, ctx: ssl.SSLContext | None, timeout: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def wait_healthy(state: Path, name: str, url: str, ctx: ssl.SSLContext | None, timeout: float = 120.0) -> None:
    def probe():
        code, body = _get(url, ctx)
        return code == 200, f"HTTP {code}: {body.strip()[:200]}"

    procs.wait_started(state, name, probe, timeout, 0.25, ControlPlaneError, f"{name} not healthy at {url}")


def client_context(pki: Path, user: str | None = "admin") -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if user:
        ctx.load_cert_chain(str(pki / f"{user}.crt"), str(pki / f"{user}.key"))
    return ctx


def insecure_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def switch_flags(defn: LocalSection, component: str) -> list[str]:
    """The definition's controlPlane settings as `component`'s flags: its feature gates for the apiserver,
    controller-manager and scheduler, the runtime config for the apiserver alone."""
    def joined(switches: dict) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(switches.items()))

    flags = [f"--feature-gates={joined(defn.feature_gates)}"] if defn.feature_gates else []
    if component == "kube-apiserver" and defn.runtime_config:
        flags.append(f"--runtime-config={joined(defn.runtime_config)}")
    return flags


def start(defn: LocalSection, state: Path) -> Path:
    """Bring up etcd, apiserver, controller-manager and scheduler; return the admin kubeconfig path."""
    check_prerequisites(defn)
    pki = state / "pki"
    certs.generate(pki, defn.host_address, defn.service_cidr)
    server = f"https://{defn.host_address}:{APISERVER_PORT}"
    admin = certs.kubeconfig(state / "admin.kubeconfig", server, pki, "admin")
    kcm_kc = certs.kubeconfig(state / "controller-manager.kubeconfig", server, pki, "controller-manager")
    sched_kc = certs.kubeconfig(state / "scheduler.kubeconfig", server, pki, "scheduler")
    certs.kubeconfig(state / "kube-proxy.kubeconfig", server, pki, "kube-proxy")

    etcd_url = f"http://127.0.0.1:{ETCD_CLIENT_PORT}"
    procs.spawn(state, "etcd", [
        str(tool("etcd", "etcd")), "--name", "rayconformance", "--data-dir", str(state / "etcd"),
        "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
        "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER_PORT}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER_PORT}",
        "--initial-cluster", f"rayconformance=http://127.0.0.1:{ETCD_PEER_PORT}",
        "--unsafe-no-fsync", "--max-request-bytes", str(10 * 1024 * 1024), "--log-level", "warn",
    ])
    wait_healthy(state, "etcd", f"{etcd_url}/health", None)

    procs.spawn(state, "kube-apiserver", [
        str(tool("kubernetes", "kube-apiserver")),
        f"--etcd-servers={etcd_url}",
        f"--bind-address={defn.host_address}", f"--advertise-address={defn.host_address}",
        f"--secure-port={APISERVER_PORT}",
        f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={defn.service_cidr}",
        "--authorization-mode=Node,RBAC", "--allow-privileged=true", "--profiling=false",
        f"--cert-dir={state / 'apiserver-certs'}", *switch_flags(defn, "kube-apiserver"),
    ])
    wait_healthy(state, "kube-apiserver", f"{server}/readyz", client_context(pki), timeout=180)

    procs.spawn(state, "kube-controller-manager", [
        str(tool("kubernetes", "kube-controller-manager")),
        f"--kubeconfig={kcm_kc}", f"--authentication-kubeconfig={kcm_kc}", f"--authorization-kubeconfig={kcm_kc}",
        "--bind-address=127.0.0.1", f"--secure-port={KCM_PORT}", "--leader-elect=false",
        "--controllers=*", "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
        f"--cluster-cidr={defn.pod_cidr}", "--allocate-node-cidrs=false",
        f"--service-cluster-ip-range={defn.service_cidr}", f"--cert-dir={state / 'kcm-certs'}",
        *switch_flags(defn, "kube-controller-manager"),
    ])
    procs.spawn(state, "kube-scheduler", [
        str(tool("kubernetes", "kube-scheduler")),
        f"--kubeconfig={sched_kc}", f"--authentication-kubeconfig={sched_kc}", f"--authorization-kubeconfig={sched_kc}",
        "--bind-address=127.0.0.1", f"--secure-port={SCHEDULER_PORT}", "--leader-elect=false",
        f"--cert-dir={state / 'scheduler-certs'}", *switch_flags(defn, "kube-scheduler"),
    ])
    wait_healthy(state, "kube-controller-manager", f"https://127.0.0.1:{KCM_PORT}/healthz", insecure_context())
    wait_healthy(state, "kube-scheduler", f"https://127.0.0.1:{SCHEDULER_PORT}/healthz", insecure_context())
    return admin


def stop(state: Path) -> None:
    procs.stop_all(state, list(COMPONENTS))
