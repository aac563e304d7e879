"""Suite releases: a clean checkout of tag vX.Y.Z is suite X.Y.Z, anything else X.Y.Z+g<commit>; `release X.Y.Z`
cuts one from CHANGELOG.md's Unreleased notes; `verify` names the release a report was made with."""
from __future__ import annotations

import datetime
import subprocess

import pytest

from rayconformance.__main__ import main
from rayconformance.report import release

CHANGELOG = "# Changelog\n\n## Unreleased\n\n- RayService suspend.\n\n## 0.1.0 (2026-12-01)\n\n- The first suite.\n"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "suite@example.org")
    git(tmp_path, "config", "user.name", "suite")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "rayconformance"\nversion = "0.1.0"\n')
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "suite")
    git(tmp_path, "tag", "-a", "v0.1.0", "-m", "Suite release 0.1.0")
    return tmp_path


def test_a_clean_checkout_of_a_release_tag_is_that_release(repo):
    assert release.suite_version(repo) == "0.1.0"
    (repo / "conformance.py").write_text("# a test not committed\n")
    commit = git(repo, "rev-parse", "--short=12", "HEAD")
    assert release.suite_version(repo) == f"0.1.0+g{commit}"
    assert release.describe(f"0.1.0+g{commit}", repo) == \
        f"suite commit {commit}: release v0.1.0's commit, run with uncommitted changes, so no release"


def test_cutting_a_release_moves_the_unreleased_notes_and_tags(repo):
    line = release.cut("0.2.0", repo, today=datetime.date(2026, 12, 6))
    commit = git(repo, "rev-parse", "--short=12", "HEAD")
    assert line == f"tagged v0.2.0 at {commit}; publish it with: git push origin HEAD v0.2.0"
    assert (repo / "CHANGELOG.md").read_text() == CHANGELOG.replace(
        "## Unreleased\n\n", "## Unreleased\n\n## 0.2.0 (2026-12-06)\n\n")
    assert 'version = "0.2.0"' in (repo / "pyproject.toml").read_text()
    assert release.suite_version(repo) == "0.2.0" and release.suite_commit("0.2.0", repo) == git(repo, "rev-parse",
                                                                                                   "HEAD")
    assert release.describe("0.2.0", repo) == "suite release v0.2.0"
    (repo / "x").write_text("next\n")
    git(repo, "add", "x")
    git(repo, "commit", "-q", "-m", "next")
    after = git(repo, "rev-parse", "--short=12", "HEAD")
    assert release.suite_version(repo) == f"0.2.0+g{after}"
    assert release.describe(f"0.2.0+g{after}", repo) == f"suite commit {after}, no release: 1 commit(s) after " \
                                                          "release v0.2.0"


@pytest.mark.parametrize("version, change, says", [
    ("0.2", None, "is not X.Y.Z"),
    ("0.1.0", None, "tag v0.1.0 exists already"),
    ("0.0.9", None, "is not after the latest release v0.1.0"),
    ("0.2.0", "dirty", "uncommitted or untracked changes"),
    ("0.2.0", "no notes", "nothing under '## Unreleased'"),
])
def test_a_release_that_cannot_be_cut_is_one_line(repo, capsys, monkeypatch, version, change, says):
    if change == "dirty":
        (repo / "new.txt").write_text("x\n")
    if change == "no notes":
        (repo / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n## 0.1.0\n\n- The first suite.\n")
        git(repo, "commit", "-q", "-am", "notes out")
    monkeypatch.setattr(release, "ROOT", repo)
    monkeypatch.setattr(release.cut, "__defaults__", (repo, None))
    capsys.readouterr()
    assert main(["release", version]) == 1
    out, err = capsys.readouterr()
    assert not out and len(err.splitlines()) == 1 and err.startswith("release: ") and says in err, err
    assert git(repo, "tag", "--list") == "v0.1.0"


def test_a_version_naming_no_release_or_commit_says_so(repo):
    assert release.describe("0.9.0", repo) == "suite release v0.9.0 (its tag is not in this clone)"
    assert release.suite_commit("0.9.0", repo) is None
    assert release.describe("0+unknown", repo) == "suite '0+unknown': no release and no commit"


def test_the_release_commands_work_on_the_checkout_itself():
    """`make release` reads the checkout's CHANGELOG.md and pyproject.toml (not the package folder's, which has
    neither): release.ROOT is the checkout."""
    assert (release.ROOT / "CHANGELOG.md").is_file() and (release.ROOT / "pyproject.toml").is_file(), release.ROOT
