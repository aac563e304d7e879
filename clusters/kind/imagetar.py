"""Image archives without a registry or a Docker build: `docker save`-format tarballs written from directories.

An image here is a list of layers (each a directory tree, a file map, or an already-written layer tarball)
plus a config (entrypoint, cmd, env, working dir, stop signal) and its names. The archive is what
`docker load`, `ctr images import` and `kind load image-archive` read. Layer tarballs are written with GNU tar
(numeric owners, xattrs, no atime) and cached next to the output by content, so images sharing a base
(e.g. a Debian rootfs) share the layer and its digest.

Command line (used by the shell builders in this directory):

    python3 imagetar.py -o OUT.tar --tag NAME:TAG [--tag ...] [--rootfs DIR ...] [--add SRC=DEST[:MODE] ...]
        [--entrypoint JSON] [--cmd JSON] [--env K=V ...] [--workdir DIR] [--stop-signal SIG] [--user UID[:GID]]
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

EPOCH = "1970-01-01T00:00:00Z"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class ImageConfig:
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: list[str] = field(default_factory=lambda: [DEFAULT_PATH])
    workdir: str | None = None
    stop_signal: str | None = None
    user: str | None = None
    labels: dict[str, str] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tar_directory(src: Path, out: Path) -> None:
    """A layer from a directory tree: GNU tar, numeric owners, xattrs kept, sorted names (reproducible order)."""
    subprocess.run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=security.capability", "--sort=name",
                    "-C", str(src), "-cf", str(out), "."], check=True)


def tar_files(files: dict[str, tuple[Path, int]], out: Path) -> None:
    """A layer holding `files` (image path -> (host file, mode)), with their parent directories, owned by root."""
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
        dirs: set[str] = set()
        for dest in sorted(files):
            parts = dest.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    t.addfile(info)
        for dest in sorted(files):
            src, mode = files[dest]
            info = t.gettarinfo(str(src), arcname=dest.strip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode, info.mtime = mode, 0
            with open(src, "rb") as f:
                t.addfile(info, f)


def config_json(diff_ids: list[str], cfg: ImageConfig) -> bytes:
    c: dict = {"Env": cfg.env}
    if cfg.entrypoint is not None:
        c["Entrypoint"] = cfg.entrypoint
    if cfg.cmd is not None:
        c["Cmd"] = cfg.cmd
    if cfg.workdir:
        c["WorkingDir"] = cfg.workdir
    if cfg.stop_signal:
        c["StopSignal"] = cfg.stop_signal
    if cfg.user:
        c["User"] = cfg.user
    if cfg.labels:
        c["Labels"] = cfg.labels
    doc = {"architecture": "amd64", "os": "linux", "created": EPOCH, "config": c,
           "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
           "history": [{"created": EPOCH, "created_by": "rayconformance imagetar"} for _ in diff_ids]}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def write_archive(out: Path, tags: list[str], layers: list[Path], cfg: ImageConfig) -> str:
    """Writes a docker-archive with `layers` (tarballs, bottom first); returns the image ID (config digest)."""
    if not tags:
        raise ValueError("an image archive needs at least one NAME:TAG")
    for t in tags:
        if ":" not in t.rsplit("/", 1)[-1]:
            raise ValueError(f"image name '{t}' has no tag")
    diff_ids = [sha256_file(p) for p in layers]
    config = config_json(diff_ids, cfg)
    image_id = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{image_id}.json", "RepoTags": tags, "Layers": [f"{d}/layer.tar" for d in diff_ids]}]
    repositories: dict[str, dict[str, str]] = {}
    for t in tags:
        name, tag = t.rsplit(":", 1)
        repositories.setdefault(name, {})[tag] = diff_ids[-1] if diff_ids else image_id
    tmp = out.with_name(out.name + ".part")
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as t:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            t.addfile(info, io.BytesIO(data))
        seen = set()
        for d, p in zip(diff_ids, layers):
            if d in seen:
                continue
            seen.add(d)
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            t.addfile(info)
            t.add(str(p), arcname=f"{d}/layer.tar", recursive=False)
        add_bytes(f"{image_id}.json", config)
        add_bytes("manifest.json", json.dumps(manifest).encode())
        add_bytes("repositories", json.dumps(repositories).encode())
    os.replace(tmp, out)
    return image_id


def build(out: Path, tags: list[str], rootfs: list[Path], add: list[str], cfg: ImageConfig,
          layer_cache: Path | None = None) -> str:
    """Layers from `rootfs` directories (cached in `layer_cache` by directory path and its .complete stamp),
    then one layer of `add` entries (SRC=DEST[:MODE]); writes the archive to `out`."""
    layer_cache = layer_cache or out.parent / "layers"
    layer_cache.mkdir(parents=True, exist_ok=True)
    layers: list[Path] = []
    with tempfile.TemporaryDirectory(dir=layer_cache) as tmpd:
        for d in rootfs:
            stamp = d / ".complete"
            key = hashlib.sha256(f"{d.resolve()}:{stamp.stat().st_mtime_ns if stamp.exists() else 'nostamp'}"
                                 .encode()).hexdigest()[:16]
            cached = layer_cache / f"dir-{key}.tar"
            if not cached.exists() or not stamp.exists():
                part = Path(tmpd) / cached.name
                tar_directory(d, part)
                shutil.move(str(part), cached)
            layers.append(cached)
        if add:
            files: dict[str, tuple[Path, int]] = {}
            for spec in add:
                src, _, dest = spec.partition("=")
                mode = 0o755
                if dest.count(":") == 1:
                    dest, m = dest.split(":")
                    mode = int(m, 8)
                if not src or not dest:
                    raise ValueError(f"--add '{spec}': expected SRC=DEST[:MODE]")
                files[dest] = (Path(src), mode)
            extra = Path(tmpd) / "files.tar"
            tar_files(files, extra)
            layers.append(extra)
        return write_archive(out, tags, layers, cfg)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True, type=Path)
    p.add_argument("--tag", action="append", default=[], required=True)
    p.add_argument("--rootfs", action="append", default=[], type=Path, help="a directory tree as one layer")
    p.add_argument("--add", action="append", default=[], help="SRC=DEST[:MODE] into the top layer")
    p.add_argument("--entrypoint", type=json.loads)
    p.add_argument("--cmd", type=json.loads)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--workdir")
    p.add_argument("--stop-signal")
    p.add_argument("--user")
    p.add_argument("--layer-cache", type=Path)
    a = p.parse_args(argv)
    cfg = ImageConfig(entrypoint=a.entrypoint, cmd=a.cmd, workdir=a.workdir, stop_signal=a.stop_signal, user=a.user)
    if a.env:
        keys = {e.split("=", 1)[0] for e in a.env}
        cfg.env = [e for e in cfg.env if e.split("=", 1)[0] not in keys] + a.env
    image_id = build(a.output, a.tag, a.rootfs, a.add, cfg, a.layer_cache)
    print(f"imagetar: {', '.join(a.tag)} -> {a.output} (sha256:{image_id[:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
