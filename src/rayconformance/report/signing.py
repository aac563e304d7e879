"""Signed reports: a certifier's Ed25519 key signs a run's files, and `verify --key` checks who signed them.

`python -m rayconformance keygen DIR` makes a key pair (DIR/signing-key.pem, private, mode 0600, and
DIR/signing-key.pub.pem). A run with `--sign-key PATH`, or `publish --sign-key PATH`, writes
`conformance-report.yaml.sig` beside the report: YAML naming each signed file with its sha256 (the report, and
report.html and junit.xml when the run has them), the signer's public key and its fingerprint
(`sha256:<hex of the raw key>`), and the signature over `message()`: those names and digests, in that order. So an
edited byte in any signed file, a file left out, or an edited signature file each break it. `problem()` checks a run
directory: with a key, the run must be signed by that key; without one, a signature that is there must hold (by the
key it names). Each problem is one line naming the file and what is wrong.
"""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import yaml
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .results import FILENAME

SIGNATURE = f"{FILENAME}.sig"
SIGNED = (FILENAME, "report.html", "junit.xml")  # signed when the run has them; the report always
HEADER = "rayconformance-signature-v1"
PRIVATE, PUBLIC = "signing-key.pem", "signing-key.pub.pem"


class SigningError(ValueError):
    """A key that cannot be used or a signature that cannot be written; the message is one line."""


def fingerprint(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _pem(path: Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise SigningError(f"{what} {path}: cannot read it ({e.strerror or e}); `python -m rayconformance keygen "
                           "DIR` makes a key pair") from None


def load_private(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file at `path` (unencrypted); a SigningError in one line otherwise."""
    data = _pem(path, "--sign-key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise SigningError(f"--sign-key {path}: the key is encrypted; give an unencrypted PEM key (`openssl pkey -in "
                           f"{path} -out plain.pem`)") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SigningError(f"--sign-key {path}: not a PEM private key; give the private key `python -m "
                           "rayconformance keygen DIR` wrote (DIR/signing-key.pem)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"--sign-key {path}: a {type(key).__name__.removeprefix('_')} key, not Ed25519; make one "
                           "with `python -m rayconformance keygen DIR`")
    return key


def load_public(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM file at `path`; a SigningError in one line otherwise."""
    data = _pem(path, "--key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        hint = " (that is a private key: give its .pub.pem)" if b"PRIVATE KEY" in data else ""
        raise SigningError(f"--key {path}: not a PEM public key{hint}; give the certifier's signing-key.pub.pem") \
            from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningError(f"--key {path}: a {type(key).__name__.removeprefix('_')} key, not Ed25519")
    return key


def keygen(directory: Path) -> tuple[Path, Path, str]:
    """Write a new key pair into `directory` (the private key readable by its owner only); never overwrites."""
    private, public = directory / PRIVATE, directory / PUBLIC
    for p in (private, public):
        if p.exists():
            raise SigningError(f"{p} exists already: keep that key, or give another directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                         serialization.PublicFormat.SubjectPublicKeyInfo))
    except OSError as e:
        raise SigningError(f"cannot write a key pair into {directory}: {e.strerror or e}") from None
    return private, public, fingerprint(key.public_key())


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def message(files: dict[str, str], key_fingerprint: str) -> bytes:
    """What is signed: the header, the signer's fingerprint, then `name digest` per file, one a line."""
    lines = [HEADER, key_fingerprint, *(f"{name} {d}" for name, d in files.items())]
    return ("\n".join(lines) + "\n").encode()


def sign(run_dir: Path, key: Ed25519PrivateKey) -> Path:
    """Write `run_dir`/conformance-report.yaml.sig over the run's SIGNED files; returns its path."""
    if not (run_dir / FILENAME).is_file():
        raise SigningError(f"{run_dir}: no {FILENAME} to sign")
    files = {name: digest(run_dir / name) for name in SIGNED if (run_dir / name).is_file()}
    public = key.public_key()
    print_ = fingerprint(public)
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    body = {"format": HEADER, "publicKey": base64.b64encode(raw).decode(), "fingerprint": print_, "files": files,
            "signature": base64.b64encode(key.sign(message(files, print_))).decode()}
    path = run_dir / SIGNATURE
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def read(run_dir: Path) -> tuple[dict | None, str | None]:
    """(the signature file's content, None), (None, a one-line problem), or (None, None) when there is none."""
    path = run_dir / SIGNATURE
    if not path.is_file():
        return None, None
    try:
        body = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # not UTF-8 text: damaged, as unparsable YAML is
        body = None
    ok = (isinstance(body, dict) and body.get("format") == HEADER and isinstance(body.get("files"), dict)
          and all(isinstance(k, str) and isinstance(v, str) for k, v in body["files"].items())
          and all(isinstance(body.get(k), str) for k in ("publicKey", "fingerprint", "signature")))
    return (body, None) if ok else (None, f"{SIGNATURE}: not a signature file of this suite (edited or damaged)")


def signer(run_dir: Path) -> str | None:
    """The fingerprint a run's signature names, if it has one."""
    body, _ = read(run_dir)
    return body["fingerprint"] if body else None


def problem(run_dir: Path, key: Ed25519PublicKey | None = None, key_name: str = "--key") -> str | None:
    """The one-line problem of the run's signature, or None: with `key`, a signature by that key over the run's
    files; without, any signature there holds by the key it names."""
    body, bad = read(run_dir)
    if bad:
        return bad
    if body is None:
        return (f"{SIGNATURE}: missing; the run is not signed, so {key_name} cannot vouch for it (sign it: `python -m "
                "rayconformance publish RUN --sign-key KEY`, or run with --sign-key)") if key else None
    try:
        named = Ed25519PublicKey.from_public_bytes(base64.b64decode(body["publicKey"], validate=True))
        signature = base64.b64decode(body["signature"], validate=True)
    except ValueError:
        return f"{SIGNATURE}: its public key or signature is not valid base64 of an Ed25519 key (edited)"
    if fingerprint(named) != body["fingerprint"]:
        return f"{SIGNATURE}: its fingerprint {body['fingerprint']} is not its public key's (edited)"
    if key is not None and fingerprint(key) != body["fingerprint"]:
        return (f"{SIGNATURE}: signed by key {body['fingerprint']}, not by {key_name} ({fingerprint(key)}): "
                "another key signed the run")
    files = body["files"]
    if FILENAME not in files:
        return f"{SIGNATURE}: does not cover {FILENAME}"
    for name in SIGNED:  # a file the run has must be signed: none left out, none added later
        if (run_dir / name).is_file() and name not in files:
            return f"{name}: not covered by the signature ({SIGNATURE} signs {', '.join(files)})"
    try:
        named.verify(signature, message(files, body["fingerprint"]))
    except InvalidSignature:
        return f"{SIGNATURE}: the signature does not match the digests it lists (the signature file was edited)"
    for name, recorded in files.items():
        if name not in SIGNED or not (run_dir / name).is_file():
            return f"{name}: signed, but missing from the run"
        if digest(run_dir / name) != recorded:
            return f"{name}: changed after it was signed (sha256 differs from the signed {recorded[:19]}...)"
    return None
