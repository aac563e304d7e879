"""The test bed's PKI: one CA, serving and client certificates, and the service-account key pair.

Generated fresh for every bring-up (cheap: EC keys), written under `<state>/pki`.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(path: Path, key) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca=False, server=False, client=False,
          sans: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
         .not_valid_after(now + dt.timedelta(days=30))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
    else:
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def generate(pki: Path, host_address: str, service_cidr: str, dns_names: list[str] | None = None) -> None:
    """CA, apiserver serving cert, admin/component/kubelet-client certs, service-account keys."""
    pki.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("rayconformance-ca")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    _write_key(pki / "ca.key", ca_key)
    (pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    first_svc_ip = next(ipaddress.ip_network(service_cidr).hosts())
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
             "localhost", *(dns_names or [])]
    sans = [x509.DNSName(n) for n in names] + [
        x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", host_address, str(first_svc_ip))]

    def issue(stem: str, cn: str, org: str | None = None, **kw) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        crt = _cert(_name(cn, org), key, ca_name, ca_key, **kw)
        _write_key(pki / f"{stem}.key", key)
        (pki / f"{stem}.crt").write_bytes(crt.public_bytes(serialization.Encoding.PEM))

    issue("apiserver", "kube-apiserver", server=True, sans=sans)
    issue("admin", "rayconformance-admin", "system:masters", client=True)
    issue("controller-manager", "system:kube-controller-manager", client=True)
    issue("scheduler", "system:kube-scheduler", client=True)
    issue("kube-proxy", "system:kube-proxy", client=True)
    issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters", client=True)
    # node agent: serving cert for its kubelet endpoint (logs), on the host address
    issue("nodeagent-serving", "rayconformance-nodeagent", server=True,
          sans=[x509.IPAddress(ipaddress.ip_address(host_address)), x509.DNSName("localhost")])

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki / "sa.key", sa)
    (pki / "sa.pub").write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo))


def kubeconfig(path: Path, server: str, pki: Path, user: str) -> Path:
    """A kubeconfig with embedded-by-path credentials for one of the issued client certs."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: rayconformance
  cluster:
    server: {server}
    certificate-authority: {pki / 'ca.crt'}
users:
- name: {user}
  user:
    client-certificate: {pki / (user + '.crt')}
    client-key: {pki / (user + '.key')}
contexts:
- name: rayconformance
  context: {{cluster: rayconformance, user: {user}}}
current-context: rayconformance
""")
    path.chmod(0o600)
    return path
