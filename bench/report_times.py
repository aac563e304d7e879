"""Prints the wall time of each test in a conformance report, per resource (RayCluster, RayJob, RayService),
with each group's sum, and the traffic numbers the tests measured.

    .venv/bin/python bench/report_times.py reports/<run-id>[/conformance-report.yaml]
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from rayconformance import features


def main(path: str) -> int:
    file = Path(path) / "conformance-report.yaml" if Path(path).is_dir() else Path(path)
    try:
        report = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as e:
        sys.exit(f"bench: cannot read the conformance report {file}: {e}; give a run directory under reports/")
    groups: dict[str, list[dict]] = {}
    for t in report["tests"]:
        resource = features.BY_NAME[t["features"][0]].resource
        groups.setdefault(resource, []).append(t)
    print(f"run {report['runId']}: operator {report['operator'].get('profile')}, cluster {report['cluster']['name']}")
    for resource, tests in groups.items():
        ran = [t for t in tests if t["outcome"] != "skipped"]
        print(f"{resource}: {len(ran)} tests ran, {sum(t['durationSeconds'] for t in ran):.1f} s in all")
        for t in tests:
            m = t.get("measurements") or {}
            traffic = (f"  requests {m['traffic.requests']}, failures {m['traffic.failures']}, "
                       f"p50/p95/p99 {m['traffic.p50_ms']}/{m['traffic.p95_ms']}/{m['traffic.p99_ms']} ms"
                       if "traffic.requests" in m else "")
            print(f"  {t['name']:<58} {t['outcome']:<8} {t['durationSeconds']:8.1f} s{traffic}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench/report_times.py reports/<run-id>[/conformance-report.yaml]")
    sys.exit(main(sys.argv[1]))
