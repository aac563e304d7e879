"""Writes every sample with Ray settings added, into a directory the suite reads same-named samples from
(RAYCONFORMANCE_SAMPLES_OVERRIDE), so a setting's CPU saving can be measured before any sample changes (issue 31's
cuts; candidates in notes-cpu-cuts.md):

    .venv/bin/python bench/sample_settings.py --out /tmp/cut --env RAY_enable_metrics_collection=0 \\
        --start-param include-log-monitor=false
    RAYCONFORMANCE_SAMPLES_OVERRIDE=/tmp/cut .venv/bin/python bench/cpu.py -- -k "..." --run-id cut-after

`--env` goes into every Ray container of every group (a variable the container already sets is kept as it is);
`--start-param` into every group's rayStartParams (same rule). It prints how many containers and groups changed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def cluster_specs(doc: dict) -> list[dict]:
    spec = doc.get("spec") or {}
    return [s for s in {"RayCluster": [spec], "RayJob": [spec.get("rayClusterSpec")],
                        "RayService": [spec.get("rayClusterConfig")]}.get(doc.get("kind"), []) if s]


def groups(cluster: dict) -> list[dict]:
    return [g for g in [cluster.get("headGroupSpec"), *(cluster.get("workerGroupSpecs") or [])] if g]


def apply(doc: dict, env: dict[str, str], params: dict[str, str]) -> tuple[int, int]:
    """Adds the settings in place; returns (containers, groups) changed."""
    containers = changed_groups = 0
    for cluster in cluster_specs(doc):
        for group in groups(cluster):
            start = group.get("rayStartParams") or {}
            group["rayStartParams"] = start
            new = {k: v for k, v in params.items() if k not in start}
            start.update(new)
            changed_groups += bool(new)
            for c in ((group.get("template") or {}).get("spec") or {}).get("containers") or []:
                if not str(c.get("image", "")).startswith("rayproject/ray"):
                    continue
                have = {e["name"] for e in c.get("env", [])}
                add = [{"name": k, "value": v} for k, v in env.items() if k not in have]
                if add:
                    c.setdefault("env", []).extend(add)
                    containers += 1
    return containers, changed_groups


def pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"sample_settings: {what} {item!r} is not NAME=VALUE")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--start-param", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--samples", type=Path, default=ROOT / "samples")
    args = ap.parse_args(argv)
    env, params = pairs(args.env, "--env"), pairs(args.start_param, "--start-param")
    args.out.mkdir(parents=True, exist_ok=True)
    totals = [0, 0, 0]
    for path in sorted(args.samples.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        counts = [apply(d, env, params) for d in docs]
        if any(c or g for c, g in counts):
            (args.out / path.name).write_text(yaml.safe_dump_all(docs, sort_keys=False))
            totals[0] += 1
        totals[1] += sum(c for c, _ in counts)
        totals[2] += sum(g for _, g in counts)
    print(f"sample_settings: {totals[0]} samples written to {args.out}: {totals[1]} Ray containers given "
          f"{len(env)} variable(s), {totals[2]} groups given {len(params)} start parameter(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
