"""The suite's commands besides the pytest run:

    python -m rayconformance verify RUN... [--key PUB.pem] check submitted runs against this checkout (certify.py);
                                                           with --key, signed by that key (signing.py)
    python -m rayconformance verify --gate RUN...          a gate's run: intact, nothing failed; claims not certified
    python -m rayconformance verify --published            check every run under reports/published/ (publish.py)
    python -m rayconformance results RUN                   summarize a run (results.py)
    python -m rayconformance publish REPORT_DIR [--replace] [--sign-key KEY]
                                                           copy a verified run to reports/published/<project>/<version>
                                                           (signed by KEY, a PEM Ed25519 private key)
    python -m rayconformance keygen DIR                    make a signing key pair (DIR/signing-key.pem, .pub.pem)
    python -m rayconformance reproduce RUN [--dry-run] [--out DIR] [--compare-with RUN2]
                                                           run a run's selection again with this checkout and compare
                                                           the verdicts per test (report/reproduce.py)
    python -m rayconformance merge SHARD... --out DIR      one report from a sharded run's reports (merge.py)
    python -m rayconformance field-coverage REPORT         a report's field coverage per CRD (fieldcov/)
    python -m rayconformance release X.Y.Z                 cut a suite release: changelog, version, tag (release.py)

A RUN (or SHARD) is a run directory (reports/<run-id>), its conformance-report.yaml or its archive
(reports/<run-id>.tar.gz). Exit 0 on success, 1 when a report does not verify, cannot be published or summarized,
the shards cannot be merged, a report has no field coverage, a release cannot be cut or a key cannot be made,
`reproduce` when a verdict differs; 2 on bad usage."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rayconformance")
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="check runs (reports/<run-id>, or its .tar.gz archive) against this suite")
    verify.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN")
    verify.add_argument("--published", action="store_true",
                        help="check every published run (reports/published/<project>/<version>)")
    verify.add_argument("--gate", action="store_true",
                        help="a gate's run (e.g. on kind, which offers no TPU): the report intact and made by this "
                             "suite, no test failed (with a baseline: none regressed); the claims it could not "
                             "certify are listed, not refused")
    verify.add_argument("--key", type=Path, metavar="PUB.pem",
                        help="the certifier's Ed25519 public key: each run must be signed by it "
                             "(conformance-report.yaml.sig)")
    results = sub.add_parser("results", help="summarize a run: verdicts per level and feature, failures, field "
                                             "coverage, where the diagnostics are")
    results.add_argument("run", type=Path, metavar="RUN", help="a run directory, its report or its .tar.gz archive")
    release = sub.add_parser("release", help="cut a suite release: CHANGELOG.md's Unreleased notes become its "
                                             "section, pyproject.toml its version, committed and tagged vX.Y.Z")
    release.add_argument("version", metavar="X.Y.Z")
    publish = sub.add_parser("publish", help="copy a verified run to reports/published/<project>/<version>")
    publish.add_argument("run_dir", type=Path, metavar="REPORT_DIR")
    publish.add_argument("--replace", action="store_true", help="replace a run already published for that version")
    publish.add_argument("--sign-key", type=Path, metavar="KEY",
                         help="sign the published copy with this Ed25519 private key (PEM)")
    keygen = sub.add_parser("keygen", help="make an Ed25519 key pair to sign reports with: DIR/signing-key.pem "
                                           "(private, mode 0600) and DIR/signing-key.pub.pem")
    keygen.add_argument("directory", type=Path, metavar="DIR")
    again = sub.add_parser("reproduce", help="run a recorded run's selection again with this checkout (same "
                                             "profile, cluster, Ray version, selection, shard) and compare the "
                                             "verdicts per test")
    again.add_argument("run", type=Path, metavar="RUN", help="a run directory, its report or its .tar.gz archive")
    again.add_argument("--dry-run", action="store_true", help="print the command it would run; run nothing")
    again.add_argument("--out", type=Path, metavar="DIR", help="report directory of the new run (default: reports)")
    again.add_argument("--compare-with", type=Path, metavar="RUN2",
                       help="run nothing: compare RUN's verdicts with those of RUN2, a run made already")
    merge = sub.add_parser("merge", help="one report from the reports of --shard K/N runs")
    merge.add_argument("run_dirs", nargs="+", type=Path, metavar="SHARD")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR")
    coverage = sub.add_parser("field-coverage", help="print a report's field coverage: totals per CRD, then the "
                                                    "fields no test asserted")
    coverage.add_argument("report", type=Path, metavar="REPORT", help="a conformance-report.yaml or its run directory")
    schema = sub.add_parser("schema", help="print the JSON Schema of a file the suite reads or writes: an operator "
                                           "profile, an options file, a cluster definition, a conformance report")
    schema.add_argument("which", choices=("profile", "options", "cluster", "report"))
    args = parser.parse_args(argv)
    if args.command == "schema":
        return run_schema(args.which)
    if args.command == "field-coverage":
        return run_field_coverage(args.report)
    if args.command == "merge":
        return run_merge(args.run_dirs, args.out)
    if args.command == "publish":
        return run_publish(args.run_dir, args.replace, args.sign_key)
    if args.command == "keygen":
        return run_keygen(args.directory)
    if args.command == "reproduce":
        from rayconformance.report import reproduce

        return reproduce.main(args.run, args.dry_run, args.out, args.compare_with)
    if args.command == "results":
        return run_results(args.run)
    if args.command == "release":
        return run_release(args.version)
    if args.published == bool(args.run_dirs):
        parser.error("verify: give RUN... or --published (not both)")
    if args.published:
        if args.gate or args.key:
            parser.error(f"verify: {'--gate' if args.gate else '--key'} checks the runs given, not --published")
        return run_verify_published()
    key = None
    if args.key:
        from rayconformance.report import signing

        try:
            key = signing.load_public(args.key)
        except signing.SigningError as e:
            print(f"verify: {e}", file=sys.stderr)
            return 2
    return 1 if sum(verify_one(run, args.gate, key, str(args.key)) for run in args.run_dirs) else 0


def run_schema(which: str) -> int:
    import json

    from rayconformance import schemas

    if which == "options":
        from rayconformance.run.options import options_file_schema

        print(json.dumps(options_file_schema(), indent=2))
        return 0
    if which == "profile":
        from rayconformance.operator.profiles import SCHEMA
    elif which == "cluster":
        from rayconformance.clusters.definition import SCHEMA
    else:
        from rayconformance.report.results import SCHEMA
    print(json.dumps(schemas.load(SCHEMA), indent=2))
    return 0


def verify_one(path: Path, gate: bool, key=None, key_name: str = "--key") -> bool:
    """Print what `verify` finds of one run (each line prefixed by its path); True when it does not verify. With
    `key` (an Ed25519 public key, from the file `key_name`) the run must be signed by it."""
    from rayconformance.report import archive, certify, release, signing
    from rayconformance.report.publish import read_report

    try:
        with archive.opened(path) as run_dir:
            problems, notes = certify.verify(run_dir, claims=not gate, key=key, key_name=key_name), []
            report, signer = read_report(run_dir) or {}, signing.signer(run_dir)
            if gate and not problems:
                problems, notes = certify.gate_findings(report)
    except archive.ArchiveError as e:
        problems, report, signer = [str(e)], {}, None
    for line in problems + notes:
        print(f"{path}: {line}")
    if not problems:  # a run with problems is named by them alone, one line each
        made = f"made with {release.describe(str(report.get('suiteVersion') or ''))}"
        signed = ((f"; signed by {key_name} ({signer})" if key else f"; signed by key {signer}") if signer else "")
        print(f"{path}: {'intact, nothing failed (a gate, not a certification)' if gate else 'verified'}; {made}"
              f"{signed}")
    return bool(problems)


def run_verify_published() -> int:
    from rayconformance.report import publish, release

    runs, problems = publish.published_dirs(), publish.check_published()
    for p in problems:
        print(f"{publish.PUBLISHED.name}/{p}")
    for run in runs:  # a run with a problem is named by its problems alone (one line each)
        rel = run.relative_to(publish.PUBLISHED).as_posix()
        if not any(p.startswith(f"{rel}: ") for p in problems):
            version = str((publish.read_report(run) or {}).get("suiteVersion") or "")
            print(f"{publish.PUBLISHED.name}/{rel}: verified; made with {release.describe(version)}")
    print(f"{len(runs)} published run(s) under {publish.PUBLISHED}: "
          + (f"{len(problems)} problem(s)" if problems else "all verified"))
    return 1 if problems else 0


def printed(command: str, error: type[Exception], action) -> int:
    """Print what `action()` returns, or its `error` as one line naming the command (exit 1)."""
    try:
        text = action()
    except error as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 1
    print(text)
    return 0


def run_publish(run_dir: Path, replace: bool, sign_key: Path | None = None) -> int:
    from rayconformance.report import publish

    def action() -> str:
        target = publish.publish(run_dir, replace=replace, sign_key=sign_key)
        return f"published {run_dir} as {target}" + (f", signed by {sign_key}" if sign_key else "")

    return printed("publish", publish.PublishError, action)


def run_keygen(directory: Path) -> int:
    from rayconformance.report import signing

    def action() -> str:
        private, public, fingerprint = signing.keygen(directory)
        return (f"private key {private} (mode 0600: keep it to yourself; --sign-key), public key {public} (hand it "
                f"to whoever verifies: verify --key); fingerprint {fingerprint}")

    return printed("keygen", signing.SigningError, action)


def run_merge(run_dirs: list[Path], out: Path) -> int:
    from rayconformance.report import archive
    from rayconformance.run import merge

    return printed("merge", merge.MergeError, lambda: f"merged {len(run_dirs)} shard reports: "
                   f"{merge.merge(run_dirs, out)} (archive {archive.path_for(out)})")


def run_results(run: Path) -> int:
    from rayconformance import results

    return printed("results", results.ResultsError, lambda: results.text(run))


def run_release(version: str) -> int:
    from rayconformance.report import release

    return printed("release", release.ReleaseError, lambda: release.cut(version))


def run_field_coverage(report: Path) -> int:
    from rayconformance.report import field_coverage as show

    return printed("field-coverage", show.ShowError, lambda: show.text(show.load_section(report)))


if __name__ == "__main__":
    sys.exit(main())
