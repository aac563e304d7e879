"""The kind provider's commands, generated files and errors, with every external command faked and recorded."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from rayconformance.clusters import definition as definitions
from rayconformance.fixtures.providers import ProviderError, make_provider
from rayconformance.fixtures.providers.kind import GPU_WAIT_SECONDS, INSTALL, PLUGIN_SOURCE, KindProvider, load_definition

REPO = Path(__file__).resolve().parents[2]
IMAGES = ["rayproject/ray:2.46.0", "quay.io/kuberay/operator:v1.6.1", "redis:7.4.0", "python:3.11-slim"]
DAEMON_DOWN = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"


def gpu_nodes(count):
    status = {"capacity": {"nvidia.com/gpu": str(count)}, "allocatable": {"nvidia.com/gpu": str(count)}} if count \
        else {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}
    return json.dumps({"items": [{"metadata": {"name": "rayconformance-gpu-worker2"}, "status": status}]})


class Runner:
    """Records argv lists; answers from a few rules. `fail` maps a command prefix to its stderr (exit 1)."""

    def __init__(self, clusters="", missing=(), fail=None, nodes=(), daemon=True):
        self.calls, self.clusters, self.missing, self.fail = [], clusters, set(missing), fail or {}
        self.nodes, self.daemon = list(nodes), daemon

    def __call__(self, argv, timeout):
        self.calls.append(argv)
        line = " ".join(argv)
        out, err, rc = "", "", 0
        for prefix, stderr in self.fail.items():
            if line.startswith(prefix):
                return subprocess.CompletedProcess(argv, 1, "", f"Creating...\nERROR: {stderr}\n")
        if argv[:2] == ["docker", "info"]:
            out, err, rc = ("27.3.1\n", "", 0) if self.daemon else ("", DAEMON_DOWN + "\n", 1)
        elif argv[:3] == ["kind", "get", "clusters"]:
            out = self.clusters
        elif argv[:3] == ["docker", "image", "inspect"] and argv[-1] in self.missing:
            err, rc = f"Error: No such image: {argv[-1]}", 1
        elif argv[0] == "kubectl" and "get" in argv and "nodes" in argv:
            out = self.nodes.pop(0) if len(self.nodes) > 1 else self.nodes[0]
        return subprocess.CompletedProcess(argv, rc, out, err)

    def lines(self):
        return [" ".join(c) for c in self.calls]


class Clock:
    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


def provider(definition, run_dir, runner, keep=False, missing_tools=()):
    clock = Clock()
    p = KindProvider(definitions.load(definition), run_dir, keep=keep, runner=runner, clock=clock, sleep=clock.sleep,
                     which=lambda t: None if t in missing_tools else f"/usr/bin/{t}")
    return p, clock


def test_cpu_cluster_is_created_loaded_and_deleted(tmp_path):
    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r)
    cluster = p.up()
    kc, cfg = tmp_path / "kubeconfig", tmp_path / "kind-config.yaml"
    assert r.lines() == [
        "docker info --format {{.ServerVersion}}",
        "kind get clusters",
        f"kind create cluster --name rayconformance-cpu --config {cfg} --kubeconfig {kc} --wait=300s",
        *[f"docker image inspect --format {{{{.Id}}}} {i}" for i in IMAGES],
        "kind load docker-image --name rayconformance-cpu " + " ".join(IMAGES),
    ]
    assert yaml.safe_load(cfg.read_text()) == {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4",
                                               "nodes": [{"role": "control-plane"}, {"role": "worker"}]}
    assert (cluster.provider, cluster.name, cluster.kubeconfig, cluster.gpu) == ("kind", "rayconformance-cpu", kc, False)
    assert cluster.extra["reused"] is False
    p.down()
    assert r.lines()[-1] == f"kind delete cluster --name rayconformance-cpu --kubeconfig {kc}"
    p.down()
    assert len([c for c in r.lines() if c.startswith("kind delete")]) == 1


def test_gpu_cluster_runs_the_fake_device_plugin_and_waits_for_gpus(tmp_path):
    r = Runner(nodes=[gpu_nodes(0), gpu_nodes(0), gpu_nodes(4)])
    p, clock = provider("kind-gpu", tmp_path, r)
    cluster = p.up()
    kc, manifest = tmp_path / "kubeconfig", tmp_path / "fake-gpu-device-plugin.yaml"
    kubectl = [c for c in r.lines() if c.startswith("kubectl")]
    assert kubectl == [
        f"kubectl --kubeconfig {kc} apply -f {manifest}",
        f"kubectl --kubeconfig {kc} -n kube-system rollout status daemonset/rayconformance-fake-gpu --timeout=300s",
        *[f"kubectl --kubeconfig {kc} get nodes -l nvidia.com/gpu.present=true -o json"] * 3,
    ]
    assert len(clock.slept) == 2 and cluster.gpu and cluster.extra["gpusPerNode"] == 4
    cm, ds = yaml.safe_load_all(manifest.read_text())
    assert cm["kind"] == "ConfigMap" and set(cm["data"]) == {p.name for p in PLUGIN_SOURCE.glob("*.py")}
    assert cm["data"]["api.py"] == (PLUGIN_SOURCE / "api.py").read_text()
    pod = ds["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    assert ctr["image"] == "rayproject/ray:2.46.0" and ctr["args"][ctr["args"].index("--count") + 1] == "4"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"name": "device-plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}} \
        in pod["volumes"]
    assert {"name": "source", "configMap": {"name": cm["metadata"]["name"]}} in pod["volumes"]
    assert ds["spec"]["template"]["metadata"]["annotations"]["rayconformance.io/source-sha256"]
    config = yaml.safe_load((tmp_path / "kind-config.yaml").read_text())
    assert config["nodes"][2] == {"role": "worker", "labels": {"nvidia.com/gpu.present": "true"}}


def test_images_missing_from_docker_are_pulled_first(tmp_path):
    r = Runner(missing={"redis:7.4.0"})
    provider("kind-cpu", tmp_path, r)[0].up()
    lines = r.lines()
    assert lines.index("docker pull redis:7.4.0") < lines.index("kind load docker-image --name rayconformance-cpu "
                                                                 + " ".join(IMAGES))
    assert [c for c in lines if c.startswith("docker pull")] == ["docker pull redis:7.4.0"]


def test_a_kept_cluster_is_not_deleted(tmp_path):
    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r, keep=True)
    p.up()
    p.down()
    assert not [c for c in r.lines() if c.startswith("kind delete")]


def test_an_existing_cluster_is_reused_and_left_alone(tmp_path):
    r = Runner(clusters="other\nrayconformance-cpu\n")
    p, _ = provider("kind-cpu", tmp_path, r)
    cluster = p.up()
    p.down()
    lines = r.lines()
    assert f"kind export kubeconfig --name rayconformance-cpu --kubeconfig {tmp_path / 'kubeconfig'}" in lines
    assert not [c for c in lines if c.startswith(("kind create", "kind delete"))]
    assert cluster.extra["reused"] is True
    assert any(c.startswith("kind load docker-image") for c in lines)


def test_a_failure_after_create_deletes_the_cluster(tmp_path):
    r = Runner(fail={"kind load": "image load failed: no space left on device"})
    p, _ = provider("kind-cpu", tmp_path, r)
    with pytest.raises(ProviderError) as e:
        p.up()
    msg = str(e.value)
    assert "\n" not in msg and "`kind load docker-image" in msg and "no space left on device" in msg
    assert r.lines()[-1].startswith("kind delete cluster --name rayconformance-cpu")


def test_a_failed_create_is_cleaned_up_too(tmp_path):
    r = Runner(fail={"kind create": "failed to create cluster: node(s) already exist"})
    with pytest.raises(ProviderError, match="already exist"):
        provider("kind-cpu", tmp_path, r)[0].up()
    assert r.lines()[-1].startswith("kind delete cluster")


def test_gpus_that_never_show_up_fail_with_a_pointer_to_the_plugin_logs(tmp_path):
    r = Runner(nodes=[gpu_nodes(0)])
    p, clock = provider("kind-gpu", tmp_path, r)
    with pytest.raises(ProviderError) as e:
        p.up()
    msg = str(e.value)
    assert "\n" not in msg and "do not show 4 nvidia.com/gpu" in msg and "rayconformance-gpu-worker2: 0" in msg
    assert "logs daemonset/rayconformance-fake-gpu" in msg and clock.now > GPU_WAIT_SECONDS
    assert r.lines()[-1].startswith("kind delete cluster --name rayconformance-gpu")


@pytest.mark.parametrize("tool", list(INSTALL))
def test_each_missing_tool_is_named_in_one_line(tmp_path, tool):
    r = Runner()
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r, missing_tools={tool})[0].up()
    msg = str(e.value)
    assert "\n" not in msg and f"`{tool}` not found on PATH" in msg and INSTALL[tool] in msg
    assert [t for t in INSTALL if f"`{t}`" in msg] == [tool]
    assert r.calls == []


def test_all_missing_tools_are_named_together(tmp_path):
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, Runner(), missing_tools={"kind", "helm"})[0].up()
    assert "\n" not in str(e.value) and "`kind`" in str(e.value) and "`helm`" in str(e.value)


def test_a_stopped_docker_daemon_is_reported(tmp_path):
    r = Runner(daemon=False)
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r)[0].up()
    msg = str(e.value)
    assert "\n" not in msg and "Docker daemon is not reachable" in msg and "Is the docker daemon running?" in msg
    assert r.lines() == ["docker info --format {{.ServerVersion}}"]


def test_node_image_and_definition_checks(tmp_path):
    d = yaml.safe_load((REPO / "clusters" / "kind-cpu.yaml").read_text())
    d["kindCluster"]["nodeImage"] = "kindest/node:v1.34.0"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(d))
    r = Runner()
    provider(str(path), tmp_path, r)[0].up()
    assert any(c.startswith("kind create cluster") and c.endswith("--image kindest/node:v1.34.0") for c in r.lines())

    d["kindCluster"]["fakeGPUs"] = {"perNode": 2, "image": "rayproject/ray:2.46.0"}  # no labelled node
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(ProviderError, match="nvidia.com/gpu.present"):
        load_definition(definitions.load(str(path)))
    with pytest.raises(ProviderError, match="for provider 'local', not 'kind'"):
        make_provider("kind", "local-cpu", tmp_path)


def test_make_provider_builds_the_kind_provider(tmp_path):
    assert isinstance(make_provider("kind", "kind-gpu", tmp_path), KindProvider)
