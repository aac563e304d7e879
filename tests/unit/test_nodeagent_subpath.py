"""The node agent creates a volume's missing subPath directories as the kubelet does: with the volume root's mode."""
from __future__ import annotations

import os
import stat

from rayconformance.clusters.local.nodeagent.runtime import make_subpath


def test_subpath_directories_take_the_volume_roots_mode(tmp_path):
    root = tmp_path / "volume"
    root.mkdir()
    os.chmod(root, 0o777)  # as local-path-provisioner makes a volume
    old = os.umask(0o022)
    try:
        made = make_subpath(root, "a/b")
    finally:
        os.umask(old)
    assert made == root / "a" / "b" and made.is_dir()
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (root / "a", made)] == [0o777, 0o777]


def test_an_existing_subpath_is_left_as_it_is(tmp_path):
    root = tmp_path / "volume"
    (root / "a").mkdir(parents=True)
    os.chmod(root / "a", 0o700)
    os.chmod(root, 0o777)
    assert make_subpath(root, "a") == root / "a"
    assert stat.S_IMODE(os.stat(root / "a").st_mode) == 0o700
