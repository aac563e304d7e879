"""The deliberate breaks' operator patches stay usable: each applies cleanly to the release it patches (the break
harness's base profile) and each is used by a break case, so a patch cannot rot unnoticed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.breaks.harness import Case
from tests.breaks.test_breaks import CASES, PATCHES

BASE_PROFILE = Case.profile  # the release module patches apply to (tree patches are checked by the cases themselves)
from tests.suiterun import PROFILES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base_source(tmp_path_factory) -> Path:
    """A writable copy of the base release's ray-operator module source (from the Go module cache)."""
    version = yaml.safe_load((PROFILES / f"{BASE_PROFILE}.yaml").read_text())["install"]["local"]["source"]["version"]
    module = f"github.com/ray-project/kuberay/ray-operator@{version}"
    r = subprocess.run(["go", "mod", "download", "-json", module], cwd="/tmp", capture_output=True, text=True,
                       env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"})
    assert r.returncode == 0, f"go mod download {module} failed: {r.stderr or r.stdout}"
    src = Path(json.loads(r.stdout)["Dir"])
    copy = tmp_path_factory.mktemp("kuberay") / "src"
    shutil.copytree(src, copy)
    subprocess.run(["chmod", "-R", "u+w", str(copy)], check=True)
    return copy


@pytest.mark.parametrize("patch", sorted(PATCHES.glob("*.patch")), ids=lambda p: p.stem)
def test_patch_applies_to_its_release(patch: Path, base_source: Path):
    r = subprocess.run(["patch", "-p1", "--dry-run", "--forward", "--batch", "-i", str(patch)], cwd=base_source,
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{patch.name} does not apply to {BASE_PROFILE}'s source:\n{r.stdout}{r.stderr}"


def test_every_patch_is_used_by_a_case():
    used = {c.patch for c in CASES if c.patch} | {c.tree_patch for c in CASES if c.tree_patch}
    unused = sorted(str(p.relative_to(PATCHES).with_suffix("")) for p in PATCHES.rglob("*.patch")
                    if str(p.relative_to(PATCHES).with_suffix("")) not in used)
    assert not unused, f"patches no break case uses: {unused}; add a Case(patch=...) or delete them"
    missing = sorted(n for n in used if not (PATCHES / f"{n}.patch").is_file())
    assert not missing, f"break cases name patches that do not exist: {missing}"
