"""Which conformance tests run: the `feature` marker is required and checked, `--run-test`/`--skip-tests` (a name
no collected test has is a usage error, before any test runs) and the profile's claims select, the known
durations order them (longest first) and `--shard K/N` splits them, and `--collect-only` lists each test with its
features and verdict.

Each selected test carries its features and its description (the test's docstring) in `user_properties`,
so the report and junit.xml see them even from xdist workers.
"""
from __future__ import annotations

import inspect
import json

import pytest

from rayconformance import features
from rayconformance.report.results import DESCRIPTION_PROPERTY, FEATURE_PROPERTY

from . import ray_versions, shards
from .state import CONFORMANCE_DIR, Run

PROBLEM_FILE = "selection.json"  # under xdist, a worker's word to the controller on the names given (a worker
# that raised a UsageError would only crash)


def narrowed_by(config: pytest.Config, opts) -> list[str]:
    """What narrowed the run below everything the profile claims (the report's `selection`): pytest's own
    selections (-k, -m, test paths, --deselect, --ignore) and the suite's (--run-test, --skip-tests, --core-only,
    --exempt-features, --supported-features, --all-features, --shard)."""
    o = config.option
    found = [flag for flag, value in (("-k", o.keyword), ("-m", o.markexpr), ("--deselect", o.deselect),
                                      ("--ignore", o.ignore), ("--ignore-glob", o.ignore_glob)) if value]
    whole = (config.rootpath / CONFORMANCE_DIR).resolve()
    found += [a for a in config.args if (config.invocation_params.dir / a).resolve() != whole]
    found += [flag for flag, value in (("--run-test", opts.run_test), ("--skip-tests", opts.skip_tests),
                                       ("--core-only", opts.core_only), ("--exempt-features", opts.exempt),
                                       ("--shard", opts.shard)) if value]
    if not opts.claimed_by.startswith("profile "):
        found.append(opts.claimed_by)
    return found


def item_features(item: pytest.Item) -> list[str]:
    return list(dict.fromkeys(name for m in item.iter_markers(features.MARKER) for name in m.args))


def description(item: pytest.Item) -> str:
    """The test's docstring as one paragraph: the behavior it checks, in a user's words."""
    doc = inspect.getdoc(getattr(item, "obj", None)) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def marker_problem(item: pytest.Item) -> str | None:
    names = item_features(item)
    if not names:
        return (f"{item.nodeid}: a conformance test needs @pytest.mark.feature(...) naming the features it "
                f"exercises; valid features: {', '.join(features.NAMES)}")
    if bad := features.unknown(names):
        return f"{item.nodeid}: " + features.unknown_message(bad, "@pytest.mark.feature")
    return None


def unmatched_names(opts, collected: set[str]) -> str | None:
    """The one-line usage error for names given to --run-test or --skip-tests that no collected test has."""
    for flag, names in (("--run-test", opts.run_test), ("--skip-tests", opts.skip_tests)):
        bad = [n for n in names if not any(features.matches(n, short) for short in collected)]
        if bad:
            which = "that short name" if len(bad) == 1 else "those short names"
            return (f"{flag} {','.join(bad)}: no collected test has {which}; `pytest conformance --collect-only` "
                    "lists each test by its short name (e.g. autoscaler[v2])")
    return None


class Selection:
    """A pytest plugin object for one conformance run."""

    def __init__(self, run: Run):
        self.run = run
        self.collected: set[str] = set()  # short names, before -k, -m or --deselect

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        self.collected.add(features.short_name(item.name))

    @pytest.hookimpl(wrapper=True)  # around bringup.py's: a name no test has stops the run before any bring-up
    def pytest_collection_finish(self, session: pytest.Session):
        # with collection errors, a module did not collect: its error is the one to name
        problem = None if session.testsfailed else unmatched_names(self.run.options, self.collected)
        if hasattr(session.config, "workerinput"):
            tmp = self.run.options.run_dir / f".{PROBLEM_FILE}.{session.config.workerinput['workerid']}"
            tmp.write_text(json.dumps({"problem": problem}))
            tmp.replace(self.run.options.run_dir / PROBLEM_FILE)
        elif problem:
            raise pytest.UsageError(problem)
        return (yield)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)  # before bringup.py's, which brings the cluster up
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        """xdist (controller): a worker's collection found a name no test has: the run stops, in one line."""
        path = self.run.options.run_dir / PROBLEM_FILE
        if path.is_file() and (problem := json.loads(path.read_text()).get("problem")):
            raise pytest.UsageError(problem)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector):
        """A conformance test without valid feature markers makes its collector fail (a collection error)."""
        rep = yield
        if rep.passed:
            root = collector.config.rootpath / CONFORMANCE_DIR
            problems = [p for node in rep.result
                        if isinstance(node, pytest.Item) and root in node.path.parents and (p := marker_problem(node))]
            if problems:
                rep.outcome, rep.longrepr, rep.result = "failed", "\n".join(problems), []
        return rep

    @pytest.hookimpl(trylast=True)  # after -k/-m deselection
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        opts = self.run.options
        if opts.run_test:
            named = {t: {id(i) for i in items if features.matches(t, features.short_name(i.name))} for t in opts.run_test}
            wanted = set().union(*named.values())
            chosen = [i for i in items if id(i) in wanted]
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in wanted])
            items[:] = chosen
        for item in items:
            names = item_features(item)
            if not names:
                continue
            item.user_properties.extend((FEATURE_PROPERTY, n) for n in names)
            if text := description(item):
                item.user_properties.append((DESCRIPTION_PROPERTY, text))
            extended = [n for n in names if features.BY_NAME[n].level == "extended"]
            if any(features.matches(s, features.short_name(item.name)) for s in opts.skip_tests):
                item.add_marker(pytest.mark.skip(reason="skipped by --skip-tests"))
            elif opts.core_only and extended:
                item.add_marker(pytest.mark.skip(reason=f"extended feature(s) {', '.join(extended)}: "
                                                        "--core-only runs Core features only"))
            elif why := ray_versions.ray_version_reason(names, opts.ray_version):  # whatever claims it, --run-test too
                item.add_marker(pytest.mark.skip(reason=why))
            elif not opts.run_test and (why := features.skip_reason(names, opts.supported, opts.exempt,
                                                                    opts.claimed_by, opts.lacked)):
                item.add_marker(pytest.mark.skip(reason=why))
        self.order_and_shard(config, items)

    def order_and_shard(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Longest first by the known durations; with --shard K/N only this shard's tests (skipped ones: shard 1).
        Under xdist, with durations, the tests that run are arranged for how xdist hands them out
        (shards.first_waves) and the skipped ones, which take no time, go last."""
        opts = self.run.options
        name = {i: features.short_name(i.name) for i in items}
        rank = {n: k for k, n in enumerate(shards.longest_first(list(name.values()), opts.durations))}
        items.sort(key=lambda i: rank[name[i]])
        runs = [i for i in items if not i.get_closest_marker("skip")]
        if opts.shard:
            k, n = opts.shard
            mine = set(shards.split([name[i] for i in runs], n, opts.durations)[k - 1])
            keep = [i for i in items if (name[i] in mine if i in runs else k == 1)]
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            items[:] = keep
        workers = int((getattr(config, "workerinput", None) or {}).get("workercount") or 1)
        if opts.durations and workers > 1:
            running = [i for i in items if not i.get_closest_marker("skip")]
            items[:] = shards.first_waves(running, workers) + [i for i in items if i.get_closest_marker("skip")]

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str] | None:
        """With --collect-only, list each conformance test with its features and whether it would run."""
        if not config.option.collectonly:
            return None
        lines = [f"rayconformance: tests and their features (operator profile {self.run.options.profile.name}):"]
        for item in items:
            if names := item_features(item):
                skip = item.get_closest_marker("skip")
                verdict = f"skip: {skip.kwargs.get('reason', '')}" if skip else "runs"
                lines.append(f"  {features.short_name(item.name)} [{', '.join(names)}] {verdict}")
        return lines
