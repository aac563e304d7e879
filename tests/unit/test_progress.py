"""A run you can watch: long steps show their time and the time left on a terminal (silent elsewhere), each finished
test is one `[k/N]` line with the run's ETA from an earlier report, and a run ends with its result table and the
paths of its reports."""
from __future__ import annotations

import io
import os
import time
from pathlib import Path
from types import SimpleNamespace

import yaml

from rayconformance.clusters import progress as steps
from rayconformance.clusters import toolcache
from rayconformance.report import summary
from rayconformance.run import progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_clock_and_status_lines():
    assert [steps.clock(s) for s in (0, 59.6, 61, 3599, 3661)] == ["0:00", "1:00", "1:01", "59:59", "1:01:01"]
    assert steps.status("bringing up the cluster", 42) == "bringing up the cluster: 0:42"
    assert steps.status("building kuberay v1.6.1", 30, 150) == "building kuberay v1.6.1: 0:30, about 2:00 left"
    assert steps.status("building kuberay v1.6.1", 200, 150) == \
        "building kuberay v1.6.1: 3:20, 0:50 longer than the last time (2:30)"
    assert steps.finished("installing the operator", 75) == "installing the operator: done in 1:15"
    assert steps.finished("installing the operator", 5, ok=False) == "installing the operator: failed after 0:05"


class Now:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_a_step_on_a_terminal_shows_its_status_then_one_line(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    out, now = Tty(), Now()
    with steps.Step("bringing up the cluster", 90, stream=out, interval=0.01, now=now):
        now.t += 30
        time.sleep(0.1)
    text = out.getvalue()
    assert text.startswith(steps.CLEAR + "rayconformance: bringing up the cluster: 0:30, about 1:00 left")
    assert text.endswith(steps.CLEAR + "rayconformance: bringing up the cluster: done in 0:30\n")


def test_a_failed_step_says_so_and_a_quick_one_leaves_nothing(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    out = Tty()
    try:
        with steps.Step("installing the operator", stream=out, interval=0.01):
            time.sleep(0.05)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert out.getvalue().endswith("installing the operator: failed after 0:00\n")
    quick = Tty()
    with steps.Step("building etcd (cached)", stream=quick, interval=10):
        pass
    assert quick.getvalue() == ""


def test_a_step_is_silent_off_a_terminal_and_in_an_xdist_worker(monkeypatch):
    out = io.StringIO()
    with steps.Step("building kind v0.33.0", 10, stream=out, interval=0.01):
        time.sleep(0.03)
    assert out.getvalue() == ""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    tty = Tty()
    with steps.Step("building traefik", 10, stream=tty, interval=0.01):
        time.sleep(0.03)
    assert tty.getvalue() == ""


def test_an_inner_step_has_the_line_to_itself_and_say_takes_the_status_lines_place(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    out = Tty()
    with steps.Step("installing the operator", stream=out, interval=0.01):
        time.sleep(0.05)
        steps.say("rayconformance: building kuberay v1.6.1 (first use; log x)", stream=out)
        with steps.Step("building kuberay v1.6.1", stream=out, interval=0.01):
            mark = len(out.getvalue())
            time.sleep(0.1)
            during = out.getvalue()[mark:]
    assert "installing the operator" not in during and "building kuberay v1.6.1: 0:00" in during
    assert steps.CLEAR + "rayconformance: building kuberay v1.6.1 (first use; log x)\n" in out.getvalue()


def test_the_relay_passes_a_builds_output_and_estimates_from_its_last_build(tmp_path, monkeypatch):
    monkeypatch.setattr(toolcache, "CACHE", tmp_path)
    times = tmp_path / "logs" / toolcache.BUILD_TIMES
    times.parent.mkdir()
    assert toolcache.last_build_seconds("kuberay") is None
    times.write_text("2026-01-01T00:00:00Z\tkuberay\tv1.6.1\t312\n2026-01-01T00:00:00Z\ttraefik\tv3.6.12\t40\n"
                     "garbage line\n2026-01-02T00:00:00Z\tkuberay\tv1.6.2\t290\n")
    assert toolcache.last_build_seconds("kuberay") == 290 and toolcache.last_build_seconds("traefik") == 40
    out = io.StringIO()
    build = ["build-tools: building kuberay v1.6.1\n", "build-tools: kuberay v1.6.1 built in 312s -> /c/bin\n"]
    steps.relay("building kuberay", "kuberay", times, build, out)
    assert out.getvalue() == "".join(build)


def test_the_build_scripts_pipe_each_build_through_the_relay():
    root = Path(__file__).resolve().parents[2] / "clusters"
    for script in ("local/build-tools.sh", "kind/build-kind-tools.sh"):
        assert '| python3 "$here/../progress.py" relay "building $c"' in (root / script).read_text(), script


def test_a_real_build_records_its_time_under_the_components_name(tmp_path):
    """build-tools.sh's `report` (run alone: the script's functions, not a build)."""
    import subprocess

    script = Path(__file__).resolve().parents[2] / "clusters" / "local" / "build-tools.sh"
    head = "\n".join(line for line in script.read_text().split("\nbuild_etcd()", 1)[0].splitlines()
                     if not line.startswith("command -v go"))  # no Go needed to report
    times = tmp_path / "logs" / "build-times.tsv"
    clock = "\nstamp() { echo 1000; }"  # a fixed clock: a second boundary must not change the seconds recorded
    probe = head + clock + '\nreport "kuberay v1.6.1" 997 /c/bin\nreport "local-path-provisioner v0.0.31" ' \
                           '1000 /c/bin\nreport etcd 1000 /c/bin\n'
    r = subprocess.run(["bash", "-c", probe, str(script)], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "RAYCONF_CACHE": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "build-tools: kuberay v1.6.1 built in 3s -> /c/bin"
    rows = [line.split("\t")[1:] for line in times.read_text().splitlines()]
    assert rows == [["kuberay", "v1.6.1", "3"], ["localpath", "v0.0.31", "0"], ["etcd", "-", "0"]]


def earlier(tests, bringup=95.0, install=40.0, provider="local"):
    return {"cluster": {"provider": provider, "bringupSeconds": bringup}, "operator": {"installSeconds": install},
            "tests": [{"name": n, "outcome": "passed", "durationSeconds": d, "startSeconds": a, "stopSeconds": b}
                      for n, d, a, b in tests]}


def test_history_reads_durations_parallelism_and_step_times():
    h = progress.History.of(earlier([("a", 60, 100, 160), ("b", 60, 100, 160), ("c", 30, 160, 190)]))
    assert h.tests == {"a": 60, "b": 60, "c": 30} and h.parallel == 150 / 90
    assert h.steps == {"bringup": 95.0, "install": 40.0}
    assert progress.History.of(None, {"a": 5.0}).tests == {"a": 5.0}


def test_the_earlier_report_is_the_newest_of_the_same_provider_and_not_this_run(tmp_path):
    for i, (run, provider) in enumerate([("old", "local"), ("kind-run", "kind"), ("this", "local")]):
        (tmp_path / run).mkdir()
        path = tmp_path / run / "conformance-report.yaml"
        path.write_text(yaml.safe_dump(earlier([("a", i, 0, 1)], provider=provider)))
        os.utime(path, (1000 + i, 1000 + i))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "conformance-report.yaml").write_text("{unclosed")
    assert progress.earlier_report(tmp_path, "this", "local")["tests"][0]["durationSeconds"] == 0
    assert progress.earlier_report(tmp_path, "this", "kind")["tests"][0]["durationSeconds"] == 1
    assert progress.earlier_report(tmp_path, "this", "existing") is None


def test_eta_from_an_earlier_run_and_without_one():
    h = progress.History(tests={"a": 300, "b": 200, "c": 100}, parallel=2.0)
    eta = progress.Eta(["a", "b", "c", "new"], h, workers=3)
    assert eta.seconds_left() == (300 + 200 + 100 + 200) / 2  # a test it did not run counts as the mean
    eta.finish("a", 280)
    eta.finish("new", 10)
    assert eta.seconds_left() == 300 / 2
    eta.finish("b", 1)
    assert eta.seconds_left() == 100  # one test left: its own time, however many workers
    eta.finish("c", 1)
    assert eta.seconds_left() == 0
    blind = progress.Eta(["x", "y", "z"], progress.History(), workers=2)
    assert blind.seconds_left() is None
    blind.finish("x", 40)
    assert blind.seconds_left() == 40  # y and z as long as x, on two workers


def test_test_lines():
    assert progress.test_line(3, 40, "provisioning", "passed", 72.4, 1500) == \
        "[3/40] provisioning passed in 1:12 (ETA 25:00)"
    assert progress.test_line(4, 40, "gpu_workers", "skipped", 0.01, None) == "[4/40] gpu_workers skipped"
    assert progress.test_line(40, 40, "suspend", "failed", 5, 0) == "[40/40] suspend failed in 0:05"


class Terminal:
    def __init__(self, tty=True):
        self.isatty, self.lines = tty, []

    def write_line(self, line, **markup):
        self.lines.append((line, markup))


def plugin(tty=True, verbosity=0, numprocesses=2, history=None):
    tr = Terminal(tty)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: tr),
                             get_verbosity=lambda: verbosity, getoption=lambda name, default=None: numprocesses)
    return progress.Progress(config, history or progress.History(tests={"a": 10, "b": 20})), tr


def phases(p, nodeid, setup="passed", call="passed", seconds=1.0):
    for when, outcome in (("setup", setup), ("call", call), ("teardown", "passed")):
        if outcome is None:
            continue
        p.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=seconds,
                                                   failed=outcome == "failed", skipped=outcome == "skipped"))


def test_the_controller_writes_one_line_per_finished_test_with_the_time_left():
    p, tr = plugin()
    p.pytest_xdist_node_collection_finished(None, ["conformance/x.py::test_a", "conformance/x.py::test_b"])
    phases(p, "conformance/x.py::test_b", call="failed", seconds=2)
    phases(p, "conformance/x.py::test_a", setup="skipped", call=None, seconds=0.01)
    assert tr.lines == [("[1/2] b failed in 0:06 (ETA 0:10)", {"red": True}), ("[2/2] a skipped", {"yellow": True})]


def test_pytests_letters_give_way_on_a_terminal_only():
    def status(p):
        gen = p.pytest_report_teststatus(report=None, config=None)
        next(gen)
        try:
            gen.send(("passed", ".", "PASSED"))
        except StopIteration as stop:
            return stop.value

    assert status(plugin()[0]) == ("passed", "", "PASSED")
    assert status(plugin(tty=False)[0]) == ("passed", ".", "PASSED")
    assert status(plugin(verbosity=1)[0]) == ("passed", ".", "PASSED")
    p, tr = plugin(tty=False)
    p.start(["x.py::test_a"])
    phases(p, "x.py::test_a")
    assert tr.lines == []


def test_the_summary_table_and_the_report_paths(tmp_path):
    html = tmp_path / "report.html"
    html.write_text("")
    report = {"resources": [
        {"name": "RayCluster", "core": {"result": "success", "statistics": {"passed": 12, "failed": 0, "skipped": 0}},
         "extended": {"result": "partial", "statistics": {"passed": 8, "failed": 0, "skipped": 3}}},
        {"name": "RayService", "core": {"result": "failure", "statistics": {"passed": 5, "failed": 1, "skipped": 0}},
         "extended": {"result": "partial", "statistics": {"passed": 0, "failed": 0, "skipped": 0}}}],
        "baseline": {"runId": "v161", "regressed": ["suspend"]}}
    assert summary.closing_lines(report, Path("r/conformance-report.yaml"), html) == [
        "resource    Core                          Extended",
        "RayCluster  success (12 passed)           partial (8 passed, 3 skipped)",
        "RayService  failure (5 passed, 1 failed)  partial (no tests)",
        "regressed against baseline v161: suspend",
        f"HTML report: {html}",
        "conformance report: r/conformance-report.yaml"]
    older = {"profiles" if k == "resources" else k: v for k, v in report.items()}  # before they were resources
    assert summary.closing_lines(older, None, None) == summary.closing_lines(report, None, None)
    last = summary.closing_lines(report, None, tmp_path / "missing.html")[-1]
    assert last == "regressed against baseline v161: suspend"


def test_a_run_ends_with_the_table_and_the_html_report(suite):
    suite.tests()
    result = suite.run("--all-features")
    out = result.stdout.lines
    at = max(i for i, line in enumerate(out) if "rayconformance summary" in line)
    assert out[at + 1].split() == ["resource", "Core", "Extended"], out[at:]
    assert out[-2].startswith("HTML report: ") and out[-2].endswith("report.html"), out[at:]
    assert out[-1].startswith("conformance report: "), out[at:]
    assert not any(line.startswith("[1/") for line in out), "no progress lines off a terminal"
