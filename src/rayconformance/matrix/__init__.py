"""The version matrix: the conformance suite run over operator profiles x Ray versions, and one report across
the runs (`reports/<matrix id>/matrix-report.yaml` and `matrix.html`).

    python -m rayconformance.matrix run [--provider P] [--cluster C] [--profiles A,B] [--ray all] [--args "..."]
    python -m rayconformance.matrix report RUN_DIR... [--out DIR]   (from recorded runs, running nothing)

- run.py: which runs (`plan`), and running them: one `pytest conformance` per cell, on a cluster brought up once
  for all cells where the provider can adopt one (local: `--attach-kubeconfig`), else each run's own
- report.py: the report model: cells (columns), per-test outcomes, per-feature verdicts, differences and
  contradictions of a profile's claims; built from recorded run directories alone
- html.py: the report as one HTML page
"""
from __future__ import annotations


class MatrixError(ValueError):
    """Bad matrix input; the message is one line."""


UNSUPPORTED = "unsupported"  # a feature's verdict when the run skipped its tests as not claimed
NOT_RUN = "not-run"  # no test of the feature ran (deselected, --core-only, no report, not run yet)
