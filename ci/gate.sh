#!/usr/bin/env bash
# The release gate's one command, as the composite action (action.yml) and the example workflow run it:
# PROFILE (required), PROVIDER, SHARD (K/N), BASELINE (a report), ARGS, RAYCONF_OPERATOR_TREE (a source tree).
# A relative PROFILE, BASELINE or RAYCONF_OPERATOR_TREE is the caller's: looked up in GITHUB_WORKSPACE (else the
# directory the script is run from) first, then in this checkout (e.g. reports/published/..., profiles/...).
# The report goes to reports/<run id>/ (conformance-report.yaml, report.html, junit.xml), its archive to
# reports/<run id>.tar.gz. The run id is `gate`, followed in a GitHub Actions job by the workflow run and its attempt
# and, for a shard, by its number: gate-<run>-<attempt>-shard-<K>-of-<N>, so a merged run names each shard's run.
set -euo pipefail

# caller_path TEST PATH: PATH made absolute against the caller's directory when it is relative and `test TEST` holds
# there (-f a file, -e anything, -d a directory); else PATH as given (a profile name, or a path in this checkout)
caller_path() {
  local base=${GITHUB_WORKSPACE:-$PWD}
  case $2 in
    "" | /*) printf '%s\n' "$2" ;;
    *) if ! test "$1" "$base/$2"; then printf '%s\n' "$2"
       elif [ -d "$base/$2" ]; then (cd "$base/$2" && pwd)
       else printf '%s\n' "$(cd "$(dirname "$base/$2")" && pwd)/$(basename "$2")"; fi ;;
  esac
}

# run_id: this run's id (above), from GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT and SHARD
run_id() {
  local id=gate
  if [ -n "${GITHUB_RUN_ID:-}" ]; then id+="-$GITHUB_RUN_ID-${GITHUB_RUN_ATTEMPT:-1}"; fi
  if [ -n "${SHARD:-}" ]; then id+="-shard-${SHARD%%/*}-of-${SHARD#*/}"; fi
  printf '%s\n' "$id"
}

main() {
  : "${PROFILE:?set PROFILE to an operator profile name or path}"
  local profile baseline
  profile=$(caller_path -f "$PROFILE")
  baseline=$(caller_path -e "${BASELINE:-}")
  if [ -n "${RAYCONF_OPERATOR_TREE:-}" ]; then
    RAYCONF_OPERATOR_TREE=$(caller_path -d "$RAYCONF_OPERATOR_TREE"); export RAYCONF_OPERATOR_TREE
  fi
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  local args=(--operator-profile "$profile" --provider "${PROVIDER:-kind}" --run-id "$(run_id)")
  if [ -n "${SHARD:-}" ]; then args+=(--shard "$SHARD"); fi
  if [ -n "$baseline" ]; then args+=(--baseline "$baseline" --fail-on regression); fi
  # shellcheck disable=SC2206 # ARGS is a list of options
  args+=(${ARGS:-})
  make conformance CONFORMANCE_ARGS="${args[*]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main; fi
