"""Published results (reports/published/<project>/<version>/): every run kept there verifies (this is the verify
step `make test` runs), `publish` copies a verified run into the layout, and a tampered copy fails in one line."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from rayconformance.__main__ import main
from rayconformance.report import certify, publish

from .test_certify import edit, run

SUITE_AT = publish.suite_at  # as it is, before `head_as_checked_out` stands in for it


@pytest.fixture(autouse=True)
def head_as_checked_out(monkeypatch):
    """A run made here names HEAD: the suite as checked out stands in for HEAD's files, so that these tests pass
    with uncommitted changes (`publish` itself refuses them). Other commits (the published runs') come from git."""
    real = publish.suite_at
    head = subprocess.run(["git", "-C", str(certify.ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()

    def suite_at(commit, dest, parts=certify.SUITE_PARTS, repo=certify.ROOT):
        if not head.startswith(commit):
            return real(commit, dest, parts, repo)
        for name in [*dict.fromkeys(d for d, _ in parts), "profiles"]:
            shutil.copytree(certify.ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"),
                            dirs_exist_ok=True)
        return None

    monkeypatch.setattr(publish, "suite_at", suite_at)


def test_the_suite_of_a_commit_holds_its_whole_feature_list(tmp_path):
    """`verify` reads a report's features from its suite commit: the package, each resource's module with it."""
    assert SUITE_AT("HEAD", tmp_path) is None
    written = sorted(p.name for p in (tmp_path / "src" / "rayconformance" / "features").glob("*.py"))
    assert written == sorted(p.name for p in (certify.ROOT / "src" / "rayconformance" / "features").glob("*.py"))
    assert certify.feature_table(tmp_path).NAMES == certify.features.NAMES


def test_every_published_run_verifies():
    problems = publish.check_published()
    assert not problems, "published runs that do not verify:\n  " + "\n  ".join(problems)


def published_run(suite, tmp_path):
    run(suite)
    target = publish.publish(suite.run_dir, tmp_path / "published")
    assert target == tmp_path / "published" / "kuberay" / "v1.6.1"  # the default profile's implementation
    return target


def test_publish_copies_a_verified_run_under_its_project_and_version(suite, tmp_path, capsys, monkeypatch):
    target = published_run(suite, tmp_path)
    assert (target / "conformance-report.yaml").read_bytes() == (suite.run_dir / "conformance-report.yaml").read_bytes()
    assert not (target / "diagnostics").exists()
    assert publish.check_published(tmp_path / "published") == []
    monkeypatch.setattr(publish, "PUBLISHED", tmp_path / "published")
    capsys.readouterr()
    assert main(["verify", "--published"]) == 0
    assert "1 published run(s)" in capsys.readouterr().out


def test_publish_refuses_to_overwrite_and_replaces_when_asked(suite, tmp_path):
    target = published_run(suite, tmp_path)
    (target / "stale").write_text("")
    try:
        publish.publish(suite.run_dir, tmp_path / "published")
        raise AssertionError("published over an existing run")
    except publish.PublishError as e:
        assert "exists already; pass --replace" in str(e)
    assert publish.publish(suite.run_dir, tmp_path / "published", replace=True) == target
    assert not (target / "stale").exists()


def test_a_run_that_does_not_verify_is_not_published(suite, tmp_path, capsys):
    run(suite)
    edit(suite.run_dir, lambda r: r["tests"][0].update(outcome="failed"))
    capsys.readouterr()
    assert main(["publish", str(suite.run_dir)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results checksum" in err[0], err
    assert not (tmp_path / "published").exists()


def test_an_edited_outcome_in_a_published_copy_is_one_line(suite, tmp_path, capsys, monkeypatch):
    target = published_run(suite, tmp_path)
    edit(target, lambda r: r["tests"][1].update(outcome="failed"))
    problems = publish.check_published(tmp_path / "published")
    assert len(problems) == 1 and problems[0].startswith("kuberay/v1.6.1: results checksum"), problems
    monkeypatch.setattr(publish, "PUBLISHED", tmp_path / "published")
    capsys.readouterr()
    assert main(["verify", "--published"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("published/kuberay/v1.6.1: results checksum") and "1 problem(s)" in out[1], out


def test_a_changed_digest_in_a_published_copy_is_one_line(suite, tmp_path):
    target = published_run(suite, tmp_path)
    edit(target, lambda r: r["certification"].update(suiteDigest="sha256:" + "0" * 64))
    problems = publish.check_published(tmp_path / "published")
    assert len(problems) == 1 and problems[0].startswith("kuberay/v1.6.1: suite digest sha256:000"), problems
    assert "is not suite commit" in problems[0], problems  # checked against the commit the report names


def test_a_run_of_an_earlier_suite_is_checked_against_that_commit(suite, tmp_path, monkeypatch):
    target = published_run(suite, tmp_path)
    copy = tmp_path / "suite-now"
    for part, _ in certify.SUITE_PARTS:  # the suite moved on since the run: a test changed
        (copy / part).mkdir(parents=True)
    (copy / "conformance" / "test_new.py").write_text("# a new test\n")
    assert publish.check_published(tmp_path / "published", root=copy) == []


def test_a_suite_commit_missing_from_the_clone_is_one_line(suite, tmp_path):
    target = published_run(suite, tmp_path)
    edit(target, lambda r: r.update(suiteVersion="0.1.0+gdeadbeef0000"))
    copy = tmp_path / "suite-now"
    (copy / "conformance").mkdir(parents=True)
    problems = publish.check_published(tmp_path / "published", root=copy)
    assert problems == ["kuberay/v1.6.1: suite commit deadbeef0000 is not in this clone's history (a shallow clone? "
                        "fetch it, e.g. actions/checkout with fetch-depth: 0)"], problems


def test_a_run_published_under_another_version_is_one_line(suite, tmp_path):
    target = published_run(suite, tmp_path)
    target.rename(target.with_name("v9.9.9"))
    assert publish.check_published(tmp_path / "published") == [
        "kuberay/v9.9.9: the report is of kuberay v1.6.1: publish it under kuberay/v1.6.1"]


def test_a_directory_without_a_report_is_one_line(tmp_path):
    (tmp_path / "published" / "kuberay" / "v1.6.1").mkdir(parents=True)
    problems = publish.check_published(tmp_path / "published")
    assert len(problems) == 1 and problems[0].startswith("kuberay/v1.6.1: no report at"), problems


def test_an_implementation_that_cannot_name_a_directory_is_refused():
    for bad in ({"project": "../x", "version": "v1"}, {"project": "kuberay", "version": ""}):
        try:
            publish.place({"implementation": bad})
            raise AssertionError(bad)
        except publish.PublishError as e:
            assert "cannot name a directory" in str(e)


def test_a_run_on_another_ray_than_the_profiles_default_is_a_column_of_its_own():
    impl = {"project": "kuberay", "version": "v1.6.1"}
    assert publish.place({"implementation": impl, "operator": {"profile": "kuberay-v1.6.1", "rayVersion": "2.46.0"}}) \
        == ("kuberay", "v1.6.1+ray2.46.0")
    assert publish.place({"implementation": impl, "operator": {"profile": "kuberay-v1.6.1", "rayVersion": "2.60.0"}}) \
        == ("kuberay", "v1.6.1")
    assert publish.place({"implementation": impl}) == ("kuberay", "v1.6.1")


def test_a_run_on_kind_is_published_beside_the_beds_run():
    impl = {"project": "kuberay", "version": "v1.7.0"}
    assert publish.place({"implementation": impl, "cluster": {"provider": "kind"}}) == ("kuberay", "v1.7.0+kind")
    assert publish.place({"implementation": impl, "cluster": {"provider": "local"}}) == ("kuberay", "v1.7.0")
    assert publish.place({"implementation": impl, "operator": {"profile": "kuberay-v1.6.1", "rayVersion": "2.46.0"},
                          "cluster": {"provider": "kind"}}) == ("kuberay", "v1.7.0+ray2.46.0+kind")
    assert publish.place({"implementation": impl, "mode": "multi-tenant"}) == ("kuberay", "v1.7.0+mode-multi-tenant")
    assert publish.place({"implementation": impl, "mode": "default"}) == ("kuberay", "v1.7.0")
    with pytest.raises(publish.PublishError, match="mode 'gpu nodes' cannot name a directory"):
        publish.place({"implementation": impl, "mode": "gpu nodes"})


def test_a_run_of_uncommitted_tests_is_not_published(suite, tmp_path):
    """A published run is checked later against the commit it names: one whose tests differ is refused now."""
    import subprocess

    run(suite)
    first = subprocess.run(["git", "-C", str(certify.ROOT), "rev-list", "--max-parents=0", "HEAD"],
                           capture_output=True, text=True).stdout.split()[0][:12]
    edit(suite.run_dir, lambda r: r.update(suiteVersion=f"0.1.0+g{first}"))
    try:
        publish.publish(suite.run_dir, tmp_path / "published")
        raise AssertionError("published")
    except publish.PublishError as e:
        assert f"is not suite commit {first}'s" in str(e) and "run it from a clean checkout" in str(e), e
    assert not (tmp_path / "published").exists()


def test_a_published_report_forged_and_re_checksummed_does_not_verify(tmp_path):
    """As one would forge it: a skipped test turned passed, the results checksum recomputed with the suite's own
    function. The report is checked against the suite commit it names, as `verify --published` does."""
    import shutil

    published = tmp_path / "published"
    shutil.copytree(publish.PUBLISHED / "kuberay" / "v1.6.1", published / "kuberay" / "v1.6.1")
    assert publish.check_published(published) == []

    def forge(report):
        next(t for t in report["tests"] if t["outcome"] == "skipped")["outcome"] = "passed"
        report["certification"]["resultsChecksum"] = certify.results_checksum(report["tests"])

    edit(published / "kuberay" / "v1.6.1", forge)
    assert publish.check_published(published) == [
        "kuberay/v1.6.1: statistics do not match the tests (resource RayCluster extended statistics: the report says "
        "56 passed, 0 failed, 26 skipped, its tests give 57 passed, 0 failed, 25 skipped): the report was changed "
        "after the run"]
