"""What a run records so that it can be run again: the report's `reproduce` section, taken when the run starts.

It holds the command line as pytest saw it (`python -m pytest ...`, and the make variables when make started it),
the suite's version and commit, the operator profile (and the source tree a profile built from a tree used), the
provider and cluster definition, the Ray version, the xdist workers asked for, and the selection with each option's
value (test paths, -k, -m, --deselect, --ignore, --run-test, --skip-tests, --core-only, --all-features,
--supported-features, --exempt-features, --shard with the durations report that split it), whether it came from the
command line or an options file. `python -m rayconformance reproduce RUN` (report/reproduce.py) runs it again.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from rayconformance.report import release

SECTION = "reproduce"


def make_variables() -> str | None:
    """The variables given to make on its command line (`JOBS=1 CONFORMANCE_ARGS=...`, as make escapes them) when
    make started this run; None otherwise."""
    if not os.environ.get("MAKELEVEL"):
        return None
    flags = os.environ.get("MAKEFLAGS", "")
    return flags.split(" -- ", 1)[1].strip() or None if " -- " in flags else None


def workers_given(args: list[str]) -> str | None:
    """The value of -n/--numprocesses on the command line (`auto`, or a number), before xdist resolves it."""
    for i, a in enumerate(args):
        if a in ("-n", "--numprocesses") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--numprocesses="):
            return a.split("=", 1)[1]
        if a.startswith("-n") and len(a) > 2 and not a.startswith("--"):
            return a[2:]
    return None


def rooted(arg: str, config: pytest.Config) -> str:
    """A test path argument relative to the checkout (as given, when pytest was started there)."""
    path, sep, rest = arg.partition("::")
    full = (config.invocation_params.dir / path).resolve()
    try:
        return full.relative_to(config.rootpath.resolve()).as_posix() + sep + rest
    except ValueError:
        return arg


def selection(config: pytest.Config, opts) -> dict:
    """Every option that selected the run's tests, with its value (empty ones left out)."""
    o = config.option
    out = {"paths": [rooted(a, config) for a in config.args],
           "keyword": o.keyword or None, "markers": o.markexpr or None,
           "deselect": list(o.deselect or []), "ignore": [str(p) for p in o.ignore or []],
           "ignoreGlob": [str(p) for p in o.ignore_glob or []],
           "runTest": list(opts.run_test), "skipTests": list(opts.skip_tests), "coreOnly": opts.core_only,
           "allFeatures": opts.claimed_by == "--all-features",
           "supportedFeatures": sorted(opts.supported) if opts.claimed_by == "--supported-features" else [],
           "exemptFeatures": sorted(opts.exempt),
           "shard": f"{opts.shard[0]}/{opts.shard[1]}" if opts.shard else None,
           "durationsFrom": opts.durations_from if opts.shard else None}
    return {k: v for k, v in out.items() if v}


def directory(path: Path) -> str:
    """Where pytest was started: relative to this checkout (`.` for its root) when inside it, so that a published
    report names no path of the machine that ran it; else as it is."""
    try:
        return Path(path).resolve().relative_to(release.ROOT.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def operator_source(opts) -> dict | None:
    """For an operator built from a source tree: the repository and ref its profile names, the tree's commit, and
    the digest of its uncommitted changes (a patched tree), as read when the run started (`Options`), so that
    another machine can build the same operator from a clone. None for a release."""
    key = getattr(opts, "operator_tree_key", None)
    if key is None:
        return None
    section = opts.profile.install.get(opts.provider)
    src = section.source if section else None
    out = {"repository": src.repository if src else None, "ref": src.ref if src else None, "commit": key.commit,
           "uncommittedChanges": key.dirty}
    return {k: v for k, v in out.items() if v}


def section(config: pytest.Config, opts) -> dict:
    """The report's `reproduce` section for the run `config` starts with `opts` (its Options)."""
    version = release.suite_version()
    args = list(config.invocation_params.args)
    out = {"command": shlex.join(["python", "-m", "pytest", *args]),
           "make": make_variables(),
           "directory": directory(config.invocation_params.dir),
           "suiteVersion": version,
           "suiteCommit": release.git(release.ROOT, "rev-parse", "HEAD"),
           "operatorProfile": opts.profile.name,
           "operatorTree": opts.operator_tree,
           "operatorTreeCommit": opts.operator_tree_key.commit if getattr(opts, "operator_tree_key", None) else None,
           "operatorSource": operator_source(opts),
           "provider": opts.provider,
           "cluster": opts.definition.name if opts.definition else None,
           "rayVersion": opts.ray_version,
           "workers": workers_given(args),
           "timeoutScale": opts.timeout_scale if opts.timeout_scale != 1.0 else None,
           "mode": opts.mode if opts.mode != "default" else None,
           "selection": selection(config, opts)}
    return {k: v for k, v in out.items() if v is not None}
