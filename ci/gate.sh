#!/usr/bin/env bash
# The release gate's one command, as the composite action (action.yml) and the example workflow run it:
# PROFILE (required), PROVIDER, SHARD (K/N), BASELINE (a report), ARGS, RAYCONF_OPERATOR_TREE (a source tree).
# The report goes to reports/gate/ (conformance-report.yaml, report.html, junit.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PROFILE:?set PROFILE to an operator profile name or path}"
args=(--operator-profile "$PROFILE" --provider "${PROVIDER:-kind}" --run-id gate)
if [ -n "${SHARD:-}" ]; then args+=(--shard "$SHARD"); fi
if [ -n "${BASELINE:-}" ]; then args+=(--baseline "$BASELINE" --fail-on regression); fi
# shellcheck disable=SC2206 # ARGS is a list of options
args+=(${ARGS:-})
make conformance CONFORMANCE_ARGS="${args[*]}"
