"""bench/cpu.py: how processes are classified by command line and markers, and the CPU arithmetic on recorded
samples (tests/unit/data/cpu: a baseline and three samples of a Ray Pod, a load generator, the bed, pytest and the
host, with a retitled Ray worker, a child never seen and a parent reaping a chain of exited children)."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "cpu"
sys.path.insert(0, str(ROOT / "bench"))

import cpu  # noqa: E402
import cpu_account as ca  # noqa: E402
import cpu_classify as cc  # noqa: E402
import cpu_sampler  # noqa: E402

RAY = "/venvs/ray/lib/python3.11/site-packages/ray"
PY = "/venvs/ray/bin/python"
NODEID = "conformance/raycluster/test_provisioning.py::test_provisioning"


@pytest.mark.parametrize("cmd,comm,expected", [
    ([f"{RAY}/core/src/ray/gcs/gcs_server", "--log_dir=x"], "gcs_server", cc.GCS),
    ([f"{RAY}/core/src/ray/raylet/raylet", "--raylet_socket_name=x"], "raylet", cc.RAYLET),
    ([PY, "-u", f"{RAY}/dashboard/dashboard.py", "--host=0.0.0.0"], "python", cc.DASHBOARD),
    ([PY, "-u", f"{RAY}/dashboard/agent.py", "--node-ip-address=x"], "python", cc.DASHBOARD),
    ([PY, "-u", f"{RAY}/_private/runtime_env/agent/main.py"], "python", cc.DASHBOARD),
    (["ray-dashboard-JobHead-0 (/venvs/ray/bin/python -u dashboard.py)"], "ray-dashboard-J", cc.DASHBOARD),
    (["ray::ServeController"], "ray::ServeContr", cc.SERVE_CONTROLLER),
    (["ray::ProxyActor"], "ray::ProxyActor", cc.SERVE_PROXY),
    (["ray::ServeReplica:default:Greeter"], "ray::ServeRepli", cc.SERVE_REPLICA),
    (["ray::IDLE"], "ray::IDLE", cc.RAY_WORKERS),
    (["ray::JobSupervisor"], "ray::JobSupervi", cc.RAY_WORKERS),
    ([PY, f"{RAY}/_private/workers/default_worker.py", "--node-ip-address=x"], "python", cc.RAY_WORKERS),
    ([PY, "-u", f"{RAY}/autoscaler/_private/monitor.py", "--logs-dir=x"], "python", cc.AUTOSCALER),
    ([PY, "/venvs/ray/bin/ray", "kuberay-autoscaler", "--cluster-name", "c"], "ray", cc.AUTOSCALER),
    ([PY, "-u", f"{RAY}/_private/log_monitor.py"], "python", cc.RAY_OTHER),
    ([PY, "/venvs/ray/bin/ray", "start", "--head", "--block"], "ray", cc.RAY_CLI),
    ([PY, "/venvs/ray/bin/ray", "job", "submit", "--address", "http://h:8265", "--", "python", "x.py"], "ray",
     cc.RAY_CLI),
    ([PY, "-m", "ray.util.client.server", "--address=10.0.0.5:6379"], "python3", cc.RAY_OTHER),
    (["ray::DashboardAgent"], "ray::DashboardA", cc.DASHBOARD),
    (["ray::RuntimeEnvAgent"], "ray::RuntimeEnv", cc.DASHBOARD),
    (["/bin/bash", "-lc", "ray start --head --block"], "bash", cc.POD_OTHER),
    (["/cache/kuberay-v1.6.1/bin/ray-operator", "--feature-gates=x"], "ray-operator", cc.OPERATOR),
    (["python3", "-u", "/opt/loadgen/loadgen.py"], "python3", cc.LOADGEN),
    (["/usr/bin/python3", "-I", "/src/clusters/local/nodeagent/cinit.py", "shim", "s.json"], "python3", cc.NODE_AGENT),
    (["/cache/local-path-provisioner", "start"], "local-path-prov", cc.STORAGE),
])
def test_pod_processes(cmd, comm, expected):
    assert cc.classify({"cmd": cmd, "comm": comm, "pod": "u1"}) == expected


@pytest.mark.parametrize("binary", cc.CONTROL_PLANE)
def test_control_plane(binary):
    assert cc.classify({"cmd": [f"/cache/bin/{binary}", "--v=2"], "comm": binary[:15], "bed": True,
                        "run": True}) == f"control-plane/{binary}"


def test_a_ray_process_child_is_its_parents():
    driver = {"cmd": ["python", "-c", "import ray; ray.init()"], "comm": "python", "pod": "u1"}
    assert cc.classify(driver, parent=cc.RAY_WORKERS) == cc.RAY_WORKERS
    forkserver = {"cmd": [PY, "-c", "from multiprocessing.forkserver import main; main(25, 27)"], "comm": "python3",
                  "pod": "u1"}
    assert cc.classify(forkserver, parent=cc.DASHBOARD) == cc.DASHBOARD
    assert cc.classify(forkserver, parent=cc.NODE_AGENT) == cc.POD_OTHER


def test_bed_harness_and_host():
    agent = {"cmd": [".venv/bin/python", "-m", "rayconformance.clusters.local.nodeagent", "--cluster", "c"],
             "comm": "python", "bed": True, "run": True}
    assert cc.classify(agent) == cc.NODE_AGENT
    iptables = {"cmd": ["iptables-restore", "--noflush"], "comm": "iptables-restor", "bed": True, "run": True}
    assert cc.classify(iptables, parent="control-plane/kube-proxy") == "control-plane/kube-proxy"
    assert cc.classify(iptables, parent=cc.PYTEST) == cc.BED_OTHER
    pytest_ = {"cmd": [".venv/bin/python", "-m", "pytest", "conformance", "-k", "loadgen"], "comm": "python",
               "run": True}
    assert cc.classify(pytest_) == cc.PYTEST
    worker = {"cmd": [".venv/bin/python", "-u", "-c", "import sys;exec(eval(sys.stdin.readline()))"],
              "comm": "python", "run": True}
    assert cc.classify(worker) == cc.WORKERS
    kubectl = {"cmd": ["kubectl", "get", "pods"], "comm": "kubectl", "run": True}
    assert cc.classify(kubectl, parent=cc.PYTEST) == cc.PYTEST
    assert cc.classify(kubectl, parent=cc.WORKERS) == cc.WORKERS
    # not the run's: the same programs without a marker, kernel threads, the sampler
    assert cc.classify({"cmd": ["/cache/bin/etcd"], "comm": "etcd"}) == cc.HOST_OTHER
    assert cc.classify({"cmd": [], "comm": "kworker/0:1"}, ppid=2) == cc.KERNEL
    assert cc.classify({"cmd": [".venv/bin/python", "bench/cpu_sampler.py", "--out", "x"], "comm": "python"}) \
        == cc.SAMPLER
    # gone before it could be read: its parent's
    assert cc.classify({"cmd": [], "comm": "kubectl"}, parent=cc.WORKERS, ppid=101) == cc.WORKERS


def test_program_skips_interpreter_options():
    assert cc.program(["python3", "-W", "ignore", "-u", "x.py", "a.py"], "python3") == ("python3", "x.py")
    assert cc.program(["/usr/bin/python3.11", "-m", "pytest"], "python3") == ("python3.11", "pytest")
    assert cc.program([], "kworker") == ("kworker", "")


def test_namespace_to_test():
    labels = {ca.ns_label(n): n for n in ("provisioning", "rayjob_k8sjob_mode[submitter]", "x" * 70)}
    assert ca.test_of_namespace("rc-provisioning-ab12c", labels) == "provisioning"
    assert ca.test_of_namespace("rc-rayjob-k8sjob-mode-submitter-0a9zz", labels) == "rayjob_k8sjob_mode[submitter]"
    assert ca.test_of_namespace(f"rc-{'x' * 54}-q1w2e", labels) == "x" * 70  # 63 characters in all
    assert ca.test_of_namespace("ray-system", labels) is None
    assert ca.test_of_namespace("rc-other-ab12c", labels) is None


def test_tests_sharing_a_namespace_label_are_told_apart_by_when_they_ran():
    # parametrized tests with long names cut to the same 53-character label: the one running owns the namespace
    a, b = "each_deletion_policy_deletes_only_its_part[succeeded-DeleteCluster]", \
        "each_deletion_policy_deletes_only_its_part[succeeded-DeleteSelf]"
    assert ca.ns_label(a) == ca.ns_label(b)
    labels, ns = {ca.ns_label(a): [a, b]}, f"rc-{ca.ns_label(a)}-q1w2e"
    windows = {a: [(100.0, 160.0)], b: [(170.0, 230.0)]}
    assert ca.test_of_namespace(ns, labels, 120.0, windows) == a
    assert ca.test_of_namespace(ns, labels, 200.0, windows) == b
    assert ca.test_of_namespace(ns, labels, 165.0, windows) is None  # between them: no one's
    assert ca.test_of_namespace(ns, labels) is None  # when is unknown
    both = {a: [(100.0, 300.0)], b: [(150.0, 200.0)]}  # on two xdist workers at once: the later start owns it
    assert ca.test_of_namespace(ns, labels, 155.0, both) == b


def test_parse_stat_with_odd_comm():
    line = "4242 (ray::Serve) (x)) S 17 4242 4242 0 -1 4194560 1 0 0 0 120 30 7 3 20 0 9 0 555 1 1 0 0"
    assert cpu_sampler.parse_stat(line) == ("ray::Serve) (x)", 17, 150, 10, 555)


def recorded() -> ca.Result:
    header, samples = ca.read_samples(DATA / "samples.jsonl")
    tests = [{"name": "provisioning", "nodeid": NODEID, "durationSeconds": 2.0}]
    return ca.account(header, samples, tests, ca.read_marks(DATA / "marks.jsonl"))


def test_components_on_recorded_samples():
    r = recorded()
    got = {c: round(v, 2) for c, v in r.components.items() if v}
    assert got == {
        cc.PYTEST: 0.04,  # the controller
        cc.WORKERS: 1.05,  # 0.50 + 0.10 + 0.20 + 0.25 of a child never seen
        "control-plane/etcd": 0.30, cc.NODE_AGENT: 0.10, cc.LOADGEN: 0.05,
        cc.RAYLET: 0.20, cc.GCS: 0.10,
        cc.RAY_WORKERS: 0.40,  # default_worker.py before its title
        cc.SERVE_REPLICA: 0.35,  # 0.30 after the title + the 0.05 its parent reaped after it was last seen
        cc.RAY_CLI: 0.33,  # `ray status` 0.10 + its child 0.20 + 0.03 its parent reaped after both were last seen
        cc.RAY_OTHER: 0.02,  # the head's `bash -lc "ray start ..."`: not Ray by itself, but in a Pod that runs Ray
        cc.HOST_OTHER: 3.00, cc.KERNEL: 0.02, cc.SAMPLER: 0.01,
    }
    assert r.wall == 3.0 and r.cores == 2 and r.capacity == 6.0
    assert round(r.run_cpu, 2) == 2.94
    assert round(r.bed_harness_cpu, 2) == 1.54
    assert round(r.recovered, 2) == 0.33
    assert round(r.machine_busy, 2) == 5.97 and round(r.machine_busy - r.attributed, 2) == 0.0


def test_per_test_split_on_recorded_samples():
    s = recorded().tests["provisioning"]
    assert round(s["ray"], 2) == 1.40  # the head Pod's Ray processes
    # the loadgen Pod 0.05 + the worker while it ran the test (1000.5-1002.5): 0.25 + 0.35 + 0.10
    assert round(s["harness"], 2) == 0.75
    assert round(s["other"], 2) == 0.0


def test_totals_line_and_json():
    r = recorded()
    text = cpu.render(r, {"tests": [{"name": "provisioning", "durationSeconds": 2.0}]}, top=5)
    assert text.splitlines()[-1] == "run: 3 s wall, 3 CPU-s of 6 CPU-s capacity (49 %), bed+harness 52 %"
    assert "provisioning" in text
    j = r.to_json()
    assert j["runCpuSeconds"] == 2.9 and j["bedHarnessPercentOfRun"] == 52.4 and j["capacityCpuSeconds"] == 6.0
    assert j["tests"]["provisioning"] == {"ray": 1.4, "harness": 0.75, "other": 0.0}


def test_peak_memory_is_the_most_any_sample_saw_and_absent_from_older_samples():
    header, samples = ca.read_samples(DATA / "samples.jsonl")
    assert ca.account(header, samples).peak_memory is None
    for s, used in zip(samples, (3, 7, 5)):
        s["mem"] = used * 2**30
    r = ca.account(header, samples)
    assert r.peak_memory == 7 * 2**30 and r.to_json()["peakMemoryGiB"] == 7.0
    assert cpu.render(r, None, top=5).endswith("; peak memory used 7.00 GiB")


def test_truncated_and_short_sample_files(tmp_path):
    lines = (DATA / "samples.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl.gz"
    with gzip.open(cut, "wt") as f:
        f.write("\n".join(lines) + "\n" + lines[-1][:40])
    header, samples = ca.read_samples(cut)
    assert header["clk_tck"] == 100 and len(samples) == 4
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:2]) + "\n")
    with pytest.raises(ca.SamplesError, match="at least two samples"):
        ca.read_samples(short)
    with pytest.raises(ca.SamplesError, match="cannot read"):
        ca.read_samples(tmp_path / "missing.jsonl")


def test_marks_plugin_writes_one_line_per_test(pytester, monkeypatch, tmp_path):
    marks = tmp_path / "marks.jsonl"
    monkeypatch.setenv("RAYCONF_CPU_MARKS", str(marks))
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    pytester.runpytest_inprocess("-p", "bench.cpu_marks", "-p", "no:rayconformance").assert_outcomes(passed=2)
    got = [json.loads(line) for line in marks.read_text().splitlines()]
    assert [g["nodeid"].rsplit("::", 1)[-1] for g in got] == ["test_a", "test_b"]
    assert all(g["start"] <= g["stop"] for g in got)


KIND_NODE = "4f" * 32
POD_UID = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


@pytest.mark.parametrize("cgroups,expected", [
    # cgroupfs engine, systemd kubelet inside the node (kind's own setup)
    (f"4:cpu,cpuacct:/docker/{KIND_NODE}/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
     f"kubelet-kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice/cri-containerd-{'a' * 64}.scope\n",
     {"node": KIND_NODE[:12], "pod": POD_UID}),
    (f"4:cpu,cpuacct:/docker/{KIND_NODE}/kubepods/besteffort/pod{POD_UID}/{'a' * 64}\n",
     {"node": KIND_NODE[:12], "pod": POD_UID}),
    (f"1:name=systemd:/system.slice/docker-{KIND_NODE}.scope/system.slice/containerd.service\n",
     {"node": KIND_NODE[:12]}),
    # a static Pod (the control plane on kind): its uid is a hash without separators
    (f"4:cpu,cpuacct:/docker/{KIND_NODE}/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
     f"kubelet-kubepods-burstable-pod{'9c' * 16}.slice/cri-containerd-{'a' * 64}.scope\n",
     {"node": KIND_NODE[:12], "pod": '9c' * 16}),
    ("4:cpu,cpuacct:/user.slice\n", {}),
])
def test_kind_node_and_pod_from_cgroups(cgroups, expected):
    assert cpu_sampler.container_markers(cgroups, own_container=None, kind_nodes={KIND_NODE[:12]}) == expected


def test_only_kind_nodes_are_nodes():
    """Another container on the same Docker (a database, another bed) is not the cluster's."""
    assert cpu_sampler.container_markers(f"4:cpu:/docker/{KIND_NODE}\n", own_container=None, kind_nodes=set()) == {}


def test_the_samplers_own_container_is_not_a_node():
    """A runner in a container (a CI job's) is not a kind node, and the nodes of its own Docker are, inside it."""
    runner = "7e" * 32
    assert cpu_sampler.container_markers(f"4:cpu:/docker/{runner}\n", own_container=runner,
                                         kind_nodes={runner[:12]}) == {}
    nested = f"4:cpu:/docker/{runner}/docker/{KIND_NODE}/kubepods/besteffort/pod{POD_UID}/{'a' * 64}\n"
    assert cpu_sampler.container_markers(nested, own_container=runner, kind_nodes={KIND_NODE[:12]}) == \
        {"node": KIND_NODE[:12], "pod": POD_UID}


def test_a_kind_node_is_told_by_its_file_system(tmp_path):
    (tmp_path / "41" / "root" / "kind").mkdir(parents=True)
    (tmp_path / "41" / "root" / "kind" / "version").write_text("v1.36.3")
    (tmp_path / "42" / "root").mkdir(parents=True)
    assert cpu_sampler.is_kind_node_root("41", proc=tmp_path) and not cpu_sampler.is_kind_node_root("42", tmp_path)


def test_kind_pod_record_from_the_kubelets_log_directories(tmp_path):
    (tmp_path / "77" / "root" / "var" / "log" / "pods" / f"rc-provisioning-ab12c_head-x_{POD_UID}").mkdir(parents=True)
    assert cpu_sampler.kind_pod_record(POD_UID, ["76", "77"], proc=tmp_path) == ["rc-provisioning-ab12c", "head-x"]
    assert cpu_sampler.kind_pod_record("another", ["77"], proc=tmp_path) is None


@pytest.mark.parametrize("info,expected", [
    ({"cmd": ["/usr/bin/kubelet", "--config=/var/lib/kubelet/config.yaml"], "comm": "kubelet", "node": "n"},
     cc.KUBELET),
    ({"cmd": ["/usr/local/bin/containerd"], "comm": "containerd", "node": "n"}, cc.NODE_RUNTIME),
    ({"cmd": ["/sbin/init"], "comm": "systemd", "node": "n"}, cc.NODE_RUNTIME),
    # a control-plane process whose Pod was not told from its cgroup is still the control plane's
    ({"cmd": ["etcd", "--data-dir=/var/lib/etcd"], "comm": "etcd", "node": "n"}, "control-plane/etcd"),
    # what the run builds on first use (a source tree's operator, Helm) is setup, not the harness
    ({"cmd": ["/go/pkg/tool/linux_amd64/compile", "-o", "_pkg_.a"], "comm": "compile", "run": True}, cc.BUILDS),
    ({"cmd": ["go", "build", "-trimpath"], "comm": "go", "run": True}, cc.BUILDS),
    ({"cmd": ["kube-apiserver", "--advertise-address=10.197.0.2"], "comm": "kube-apiserver", "node": "n",
      "pod": "u"}, "control-plane/kube-apiserver"),
    ({"cmd": [f"{RAY}/core/src/ray/gcs/gcs_server"], "comm": "gcs_server", "node": "n", "pod": "u"}, cc.GCS),
    ({"cmd": ["/pause"], "comm": "pause", "node": "n", "pod": "u"}, cc.POD_OTHER),
    ({"cmd": ["dockerd", "--data-root", "/var/cache/x"], "comm": "dockerd", "run": True}, cc.ENGINE),
    ({"cmd": ["containerd-shim-runc-v2", "-namespace", "moby"], "comm": "containerd-shim", "run": True}, cc.ENGINE),
    ({"cmd": ["python3", "/src/clusters/kind/runc-wrapper.py", "create"], "comm": "python3", "run": True},
     cc.ENGINE),
])
def test_kind_processes(info, expected):
    """On kind the kubelet and its runtime are the node agent's share, the engine is the bed's, Pods as on local."""
    assert cc.classify(info) == expected


def test_sample_settings_reach_every_ray_container_and_group_but_keep_what_a_sample_sets():
    from bench import sample_settings
    svc = {"kind": "RayService", "spec": {"rayClusterConfig": {
        "headGroupSpec": {"rayStartParams": {"include-log-monitor": "true"}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.60.0", "env": [{"name": "A", "value": "mine"}]},
            {"name": "sidecar", "image": "busybox:1.36"}]}}},
        "workerGroupSpecs": [{"template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.60.0"}]}}}]}}}
    assert sample_settings.apply(svc, {"A": "0", "B": "1"}, {"include-log-monitor": "false"}) == (2, 1)
    head, worker = sample_settings.groups(svc["spec"]["rayClusterConfig"])
    assert head["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "mine"}, {"name": "B", "value": "1"}]
    assert "env" not in head["template"]["spec"]["containers"][1]
    assert head["rayStartParams"] == {"include-log-monitor": "true"}
    assert worker["rayStartParams"] == {"include-log-monitor": "false"}
    assert worker["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "0"}, {"name": "B", "value": "1"}]
    assert sample_settings.apply({"kind": "Service", "spec": {}}, {"A": "0"}, {}) == (0, 0)


def test_test_paths_given_narrow_the_run_else_the_whole_suite_runs():
    assert cpu.suite_paths(["-k", "provisioning", "--run-id", "x"]) == ["conformance"]
    files = ["conformance/rayservice/test_upgrade.py", "conformance/rayservice/test_head_loss.py::test_x"]
    assert cpu.suite_paths([*files, "--operator-profile", "kuberay-v1.7.0"]) == []
    assert cpu.suite_paths(["-k", "conformance"]) == ["conformance"]
