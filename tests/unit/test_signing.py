"""Signed reports: a run or a publish signed with a certifier's Ed25519 key verifies with that key, and another key,
an edited byte, an edited signature or a missing signature each fail `verify --key` in one line."""
from __future__ import annotations

import stat
import tarfile

import pytest

from rayconformance.__main__ import main
from rayconformance.report import archive, certify, publish, signing

from . import test_published
from .conftest import usage_error
from .test_certify import CLAIMS, PASSING, run

head_as_checked_out = test_published.head_as_checked_out  # autouse: a run made here names HEAD


@pytest.fixture
def keys(tmp_path):
    """Two key pairs: the certifier's (`mine`) and someone else's (`other`)."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    signing.keygen(mine)
    signing.keygen(other)
    return mine / signing.PRIVATE, mine / signing.PUBLIC, other / signing.PUBLIC


def out_of(capsys, *args) -> tuple[int, list[str], str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err


def signed_run(suite, private):
    suite.tests(PASSING)
    result = suite.run(CLAIMS, f"--sign-key={private}")
    assert result.ret == 0, result.stdout.lines
    return suite.run_dir


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(tmp_path, capsys):
    rc, out, err = out_of(capsys, "keygen", tmp_path / "k")
    assert rc == 0, err
    private = tmp_path / "k" / signing.PRIVATE
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert signing.fingerprint(signing.load_public(tmp_path / "k" / signing.PUBLIC)) in out[0]
    assert signing.load_private(private)
    rc, out, err = out_of(capsys, "keygen", tmp_path / "k")
    assert rc == 1 and len(err.splitlines()) == 1 and "exists already" in err, err


def test_a_signed_run_verifies_with_its_key_and_the_archive_carries_the_signature(suite, keys, capsys):
    private, public, _ = keys
    run_dir = signed_run(suite, private)
    assert (run_dir / signing.SIGNATURE).is_file()
    body, _ = signing.read(run_dir)
    assert list(body["files"]) == ["conformance-report.yaml", "report.html", "junit.xml"], body["files"]
    with tarfile.open(archive.path_for(run_dir)) as tar:
        assert f"{run_dir.name}/{signing.SIGNATURE}" in tar.getnames()
    for given in (run_dir, archive.path_for(run_dir)):
        rc, out, _ = out_of(capsys, "verify", given, "--key", public)
        assert rc == 0 and len(out) == 1 and out[0].startswith(f"{given}: verified; made with "), out
        assert out[0].endswith(f"signed by {public} ({signing.fingerprint(signing.load_public(public))})"), out
    rc, out, _ = out_of(capsys, "verify", run_dir)  # without --key: the signature holds by the key it names
    assert rc == 0 and "signed by key sha256:" in out[0], out


def test_another_key_fails_in_one_line(suite, keys, capsys):
    private, _, other = keys
    run_dir = signed_run(suite, private)
    for given in (run_dir, archive.path_for(run_dir)):
        rc, out, _ = out_of(capsys, "verify", given, "--key", other)
        assert rc == 1 and len(out) == 1, out
        assert out[0].startswith(f"{given}: {signing.SIGNATURE}: signed by key sha256:") and f"not by {other}" in \
            out[0], out


@pytest.mark.parametrize("name", ["conformance-report.yaml", "junit.xml", "report.html"])
def test_one_edited_byte_fails_in_one_line_naming_the_file(suite, keys, capsys, name):
    private, public, _ = keys
    run_dir = signed_run(suite, private)
    path = run_dir / name
    data = bytearray(path.read_bytes())
    at = data.index(b"RayClusterSuspend")  # a byte that leaves the file well-formed: the feature's last letter
    data[at + len("RayClusterSuspend") - 1] = ord("D")
    path.write_bytes(bytes(data))
    for args in (["--key", public], []):  # a signature that is there must hold, with or without --key
        rc, out, _ = out_of(capsys, "verify", run_dir, *args)
        assert rc == 1 and out == [f"{run_dir}: {name}: changed after it was signed (sha256 differs from the "
                                   f"signed {signing.read(run_dir)[0]['files'][name][:19]}...)"], out


def test_an_edited_signature_file_fails_in_one_line(suite, keys, capsys):
    private, public, _ = keys
    run_dir = signed_run(suite, private)
    sig = run_dir / signing.SIGNATURE
    body, _ = signing.read(run_dir)
    sig.write_text(sig.read_text().replace(body["files"]["junit.xml"], "sha256:" + "0" * 64))
    rc, out, _ = out_of(capsys, "verify", run_dir, "--key", public)
    assert rc == 1 and out == [f"{run_dir}: {signing.SIGNATURE}: the signature does not match the digests it lists "
                               "(the signature file was edited)"], out


def test_a_missing_signature_fails_when_a_key_is_given(suite, keys, capsys):
    _, public, _ = keys
    run(suite)
    rc, out, _ = out_of(capsys, "verify", suite.run_dir, "--key", public)
    assert rc == 1 and len(out) == 1 and out[0].startswith(f"{suite.run_dir}: {signing.SIGNATURE}: missing"), out
    rc, out, _ = out_of(capsys, "verify", suite.run_dir)
    assert rc == 0, out  # an unsigned run verifies as before when no key is asked for
    (suite.run_dir / "report.html").unlink()
    private = keys[0]
    signing.sign(suite.run_dir, signing.load_private(private))
    (suite.run_dir / "report.html").write_text("<p>added after signing</p>")
    rc, out, _ = out_of(capsys, "verify", suite.run_dir, "--key", public)
    assert rc == 1 and out == [f"{suite.run_dir}: report.html: not covered by the signature ({signing.SIGNATURE} "
                               "signs conformance-report.yaml, junit.xml)"], out


def test_a_key_that_is_not_usable_is_one_line(suite, keys, tmp_path, capsys):
    private, public, _ = keys
    suite.tests(PASSING)
    assert "not a PEM private key" in usage_error(suite.run(CLAIMS, f"--sign-key={public}"))
    assert "cannot read it" in usage_error(suite.run(CLAIMS, f"--sign-key={tmp_path / 'none.pem'}"))
    run(suite)
    rc, out, err = out_of(capsys, "verify", suite.run_dir, "--key", private)
    assert rc == 2 and not out and len(err.splitlines()) == 1 and "that is a private key" in err, err


def test_publish_signs_the_published_copy(suite, keys, tmp_path, capsys, monkeypatch):
    private, public, other = keys
    run(suite)
    monkeypatch.setattr(publish, "PUBLISHED", tmp_path / "published")
    rc, out, err = out_of(capsys, "publish", suite.run_dir, "--sign-key", private)
    assert rc == 0 and out[0].endswith(f", signed by {private}"), (out, err)
    target = tmp_path / "published" / "kuberay" / "v1.6.1"
    assert not (suite.run_dir / signing.SIGNATURE).exists() and (target / signing.SIGNATURE).is_file()
    assert certify.verify(target, key=signing.load_public(public)) == []
    assert publish.check_published(tmp_path / "published") == []
    rc, out, _ = out_of(capsys, "verify", target, "--key", other)
    assert rc == 1 and len(out) == 1 and "another key signed the run" in out[0], out
    report = target / "conformance-report.yaml"
    report.write_text(report.read_text().replace("RayClusterSuspend", "RayClusterSuspenD", 1))
    assert publish.check_published(tmp_path / "published") == [
        f"kuberay/v1.6.1: conformance-report.yaml: changed after it was signed (sha256 differs from the signed "
        f"{signing.read(target)[0]['files']['conformance-report.yaml'][:19]}...)"]


def test_a_signed_run_is_published_with_its_signature(suite, keys, tmp_path):
    private, public, _ = keys
    run_dir = signed_run(suite, private)
    target = publish.publish(run_dir, tmp_path / "published")
    assert (target / signing.SIGNATURE).read_bytes() == (run_dir / signing.SIGNATURE).read_bytes()
    assert certify.verify(target, key=signing.load_public(public)) == []
    with pytest.raises(publish.PublishError, match="not a PEM private key"):
        publish.publish(run_dir, tmp_path / "published", replace=True, sign_key=public)


@pytest.mark.parametrize("damage", ["bytes", "names"])
def test_a_damaged_signature_file_is_one_line_not_a_traceback(tmp_path, keys, capsys, damage):
    """A signature file that is not UTF-8 text, or whose files are not names and digests, is a damaged one: one
    line from `problem`, none named by `signer`, and `verify` says so in one line."""
    private, public, _ = keys
    (tmp_path / signing.FILENAME).write_text("kind: ConformanceReport\n")
    (tmp_path / "report.html").write_text("<p>the page</p>")
    sig = signing.sign(tmp_path, signing.load_private(private))
    if damage == "bytes":
        sig.write_bytes(b"\xff\xfe" + sig.read_bytes())
    else:  # a file name YAML reads as a number
        sig.write_text(sig.read_text().replace("  report.html:", "  1:"))
    damaged = f"{signing.SIGNATURE}: not a signature file of this suite (edited or damaged)"
    assert signing.problem(tmp_path) == damaged
    assert signing.problem(tmp_path, signing.load_public(public)) == damaged
    assert signing.signer(tmp_path) is None
    rc, out, _ = out_of(capsys, "verify", tmp_path, "--key", public)
    assert rc == 1 and out == [f"{tmp_path}: {damaged}"], out
