"""One portable results archive per run: `reports/<run-id>.tar.gz` beside the run directory, written by every run
(finish.py) and by `merge`, read back by `verify` and `results` as a run directory.

It holds `<run-id>/` with the report (YAML), its signature if the run was signed (signing.py), report.html,
junit.xml, the CPU account if any, the diagnostics of the tests that have them and the test bed's logs; nothing else
of the run directory (its kubeconfig, the operator's rendered install, the run's own bookkeeping). Diagnostics are
written with Secret values redacted (diagnostics.py); the archive redacts again any Secret value a YAML file in them
still holds.
"""
from __future__ import annotations

import contextlib
import io
import tarfile
import tempfile
from pathlib import Path
from typing import Iterator

import yaml

from . import diagnostics
from .results import FILENAME
from .signing import SIGNATURE

SUFFIX = ".tar.gz"
FILES = (FILENAME, SIGNATURE, "report.html", "junit.xml", "cpu.json")
DIRS = ("diagnostics", "testbed-logs")


class ArchiveError(ValueError):
    """A path that is no run directory, report or archive; the message is one line."""


def path_for(run_dir: Path) -> Path:
    """Where the archive of `run_dir` goes: beside it, `<run-id>.tar.gz`."""
    return run_dir.with_name(run_dir.name + SUFFIX)


def members(run_dir: Path) -> list[Path]:
    """The files of `run_dir` the archive holds, in order."""
    found = [run_dir / name for name in FILES if (run_dir / name).is_file()]
    for name in DIRS:
        found += sorted(p for p in (run_dir / name).rglob("*") if p.is_file()) if (run_dir / name).is_dir() else []
    return found


def redacted(path: Path) -> bytes:
    """The bytes of a diagnostics file as archived: a YAML file that still holds a Secret's values gets them
    redacted; anything else as it is."""
    data = path.read_bytes()
    if path.suffix not in (".yaml", ".yml") or (b"Secret" not in data and b"secretKeyRef" not in data):
        return data
    try:
        docs = list(yaml.safe_load_all(data))
    except yaml.YAMLError:
        return data
    clean = [diagnostics.redact(d) for d in docs]
    return data if clean == docs else yaml.safe_dump_all(clean, sort_keys=False).encode()


def write(run_dir: Path, out: Path | None = None) -> Path:
    """Archive `run_dir` (as `<its name>/...`) into `out` (default: path_for(run_dir)); returns the archive's path."""
    out = out or path_for(run_dir)
    tmp = out.with_name(f".{out.name}.tmp")
    with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
        for path in members(run_dir):
            rel = path.relative_to(run_dir)
            data = redacted(path) if rel.parts[0] == "diagnostics" else path.read_bytes()
            info = tarfile.TarInfo(f"{run_dir.name}/{rel.as_posix()}")
            info.size, info.mtime, info.mode = len(data), int(path.stat().st_mtime), 0o644
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    return out


def is_archive(path: Path) -> bool:
    return path.name.endswith((SUFFIX, ".tgz")) and path.is_file()


@contextlib.contextmanager
def opened(path: Path) -> Iterator[Path]:
    """The run directory `path` names: a run directory, its conformance-report.yaml, or a run's archive (extracted
    into a temporary directory for as long as the context lasts)."""
    if path.is_dir():
        yield path
    elif path.name == FILENAME and path.is_file():
        yield path.parent
    elif is_archive(path):
        with tempfile.TemporaryDirectory(prefix="rayconf-archive-") as tmp:
            try:
                with tarfile.open(path, "r:gz") as tar:
                    tar.extractall(tmp, filter="data")
            except (tarfile.TarError, OSError, EOFError) as e:
                raise ArchiveError(f"{path}: not a readable run archive ({e})") from None
            yield run_dir_in(Path(tmp), path)
    else:
        raise ArchiveError(f"{path}: no run directory, {FILENAME} or {SUFFIX} archive of a run; give "
                           "reports/<run-id> or reports/<run-id>.tar.gz")


def run_dir_in(root: Path, archive: Path) -> Path:
    """The directory of an extracted archive that holds the report."""
    if (root / FILENAME).is_file():
        return root
    found = [p.parent for p in root.glob(f"*/{FILENAME}")]
    if len(found) != 1:
        raise ArchiveError(f"{archive}: holds {'no' if not found else len(found)} {FILENAME} at its top "
                           "(a run's archive holds one, under <run-id>/)")
    return found[0]
