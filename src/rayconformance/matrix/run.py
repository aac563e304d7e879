"""Running the matrix: which runs (`plan`: profiles x Ray versions), and one `pytest conformance` per cell, its
output and report kept under the matrix directory, the report rewritten after each run (a partial matrix
survives an interrupted one).

The cluster: where the provider can adopt a cluster that is already up (`Provider.adoptable`: the local bed),
it is brought up once for all cells and each run attaches to it with `--attach-kubeconfig` (the operator
installed from the profile and uninstalled per run), then taken down; with `kubeconfig` given, that cluster is
used and left up. Other providers (kind, existing) bring up, or reach, their cluster in each run as a lone run
would.
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rayconformance import providers
from rayconformance.clusters.definition import ClusterDefinition
from rayconformance.operator import profiles

from . import MatrixError
from .report import Cell, build, write

ROOT = profiles.PROFILES_DIR.parent  # the checkout: the suite runs from it (conformance/, profiles/, samples/)


def plan(profile_names: list[str], ray: str) -> tuple[list[Cell], list[str]]:
    """The cells to run, in order, and one line per (profile, Ray version) left out. `ray`: empty (each
    profile's default), `all` (each profile's rayVersions), or a comma list (those the profile supports)."""
    cells, skipped = [], []
    wanted = [v.strip() for v in ray.split(",") if v.strip()] if ray not in ("", "all") else []
    for bad in wanted:
        if not profiles.RAY_VERSION.match(bad):
            raise MatrixError(f"MATRIX_RAY: '{bad}' is not a Ray release (MAJOR.MINOR.PATCH), or use 'all'")
    for name in profile_names:
        try:
            p = profiles.load(name)
        except profiles.ProfileError as e:
            raise MatrixError(str(e)) from None
        if not p.ray_versions and not wanted:
            raise MatrixError(f"operator profile {p.name} names no rayVersions; give MATRIX_RAY")
        versions = (list(p.ray_versions) if ray == "all" else [p.ray_version] if not wanted
                    else [v for v in wanted if not p.ray_versions or v in p.ray_versions])
        for v in wanted:
            if p.ray_versions and v not in p.ray_versions:
                skipped.append(f"{p.name}@{v}: not run, the profile supports Ray {', '.join(p.ray_versions)}")
        cells += [Cell(p.name if p.path.parent == profiles.PROFILES_DIR else str(p.path), v, claims=p.features)
                  for v in versions]
    if not cells:
        raise MatrixError("nothing to run: no profile supports the Ray versions asked for")
    return cells, skipped


@dataclass
class Target:
    """Where every cell runs: the suite's --provider/--cluster, and a cluster already up to attach to."""
    provider: str
    definition: ClusterDefinition | None  # resolved once here; each run is given its file
    kubeconfig: Path | None = None  # set: each run attaches to this cluster

    def suite_args(self) -> list[str]:
        return (["--provider", self.provider] + (["--cluster", str(self.definition.path)] if self.definition else [])
                + (["--attach-kubeconfig", str(self.kubeconfig)] if self.kubeconfig else []))


def target(provider: str | None, cluster: str | None, kubeconfig: str | None) -> tuple[Target, type]:
    try:
        name, defn = providers.resolve(provider, cluster)
        cls = providers.provider_class(name)
    except providers.ProviderError as e:
        raise MatrixError(str(e)) from None
    if kubeconfig and not cls.adoptable:
        raise MatrixError(f"--kubeconfig: provider {name} cannot attach to a cluster that is already up; leave it out")
    if kubeconfig and not Path(kubeconfig).is_file():
        raise MatrixError(f"--kubeconfig {kubeconfig}: no such file")
    return Target(name, defn, Path(kubeconfig).resolve() if kubeconfig else None), cls


def run_cell(cell: Cell, out: Path, where: Target, extra: list[str], jobs: int | str) -> None:
    run_id = f"{Path(cell.profile).name.removesuffix('.yaml')}-ray{cell.ray_version}"
    cell.args = ["--operator-profile", cell.profile, "--ray-version", cell.ray_version, *extra]
    argv = [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-q", "-rN",
            *(["-n", str(jobs)] if str(jobs) != "1" else []), *where.suite_args(),
            "--report-dir", str(out), "--run-id", run_id, *cell.args]
    started = time.monotonic()
    print(f"matrix: {cell.column}: {shlex.join(argv[2:])}", flush=True)
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    cell.wall_seconds = round(time.monotonic() - started, 1)
    cell.run_dir = out / run_id
    cell.run_dir.mkdir(parents=True, exist_ok=True)
    (cell.run_dir / "pytest-output.txt").write_text(proc.stdout + proc.stderr)
    cell.load()
    if cell.report is None:
        tail = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()][-1:] or ["no output"]
        cell.error = f"no report (pytest exit {proc.returncode}): {tail[0][:300]}"
    print(f"matrix: {cell.column}: {cell.summary()} in {cell.wall_seconds}s", flush=True)


def run_matrix(cells: list[Cell], skipped: list[str], out: Path, matrix_id: str, where: Target, shared: bool,
               extra: list[str], jobs: int | str) -> Path:
    """Run every cell in order; `shared`: bring the cluster up once here for all of them (unless `where`
    already names one) and take it down at the end. Returns the matrix report's path."""
    out.mkdir(parents=True, exist_ok=True)
    for line in skipped:
        print(f"matrix: {line}")
    print(f"matrix: {len(cells)} runs on provider {where.provider}: {', '.join(c.column for c in cells)} -> {out}",
          flush=True)
    bed = None
    if shared and where.kubeconfig is None:
        bed = providers.build(where.provider, where.definition, out / "cluster")
        try:
            where.kubeconfig = bed.up().kubeconfig
        except providers.ProviderError as e:
            raise MatrixError(f"the matrix's cluster did not come up: {e}") from None
        print(f"matrix: cluster up in {bed.cluster.bringup_seconds:.0f}s (kubeconfig {where.kubeconfig})", flush=True)
    try:
        for c in cells:
            run_cell(c, out, where, extra, jobs)
            write(build(cells, matrix_id, skipped), out)
    finally:
        if bed is not None:
            bed.down()
    return write(build(cells, matrix_id, skipped), out)[0]
