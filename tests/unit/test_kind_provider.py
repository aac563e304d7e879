"""The kind provider's commands, generated files and errors, with every external command faked and recorded."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from rayconformance.clusters import definition as definitions
from rayconformance.clusters import kind as kindtools
from rayconformance.clusters.toolcache import ToolBuildError
from rayconformance.providers import ProviderError, make_provider
from rayconformance.providers.kind import GPU_WAIT_SECONDS, INSTALL, PLUGIN_SOURCE, KindProvider, with_cgroupfs

REPO = Path(__file__).resolve().parents[2]
IMAGES = ["redis:7.4.0", "python:3.11-slim", "traefik:v3.6.12"]
DAEMON_DOWN = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"


def gpu_nodes(count):
    status = {"capacity": {"nvidia.com/gpu": str(count)}, "allocatable": {"nvidia.com/gpu": str(count)}} if count \
        else {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}
    return json.dumps({"items": [{"metadata": {"name": "rayconformance-gpu-worker2"}, "status": status}]})


class Runner:
    """Records argv lists; answers from a few rules. `fail` maps a command prefix to its stderr (exit 1)."""

    def __init__(self, clusters="", missing=(), fail=None, nodes=(), daemon=True, engine=False, cgroup="2"):
        self.calls, self.clusters, self.missing, self.fail = [], clusters, set(missing), fail or {}
        self.cgroup = cgroup  # the engine host's cgroup version, as `docker info` reports it
        self.nodes, self.daemon, self.engine = list(nodes), daemon, engine  # engine: the project's answers

    def __call__(self, argv, timeout):
        self.calls.append(argv)
        on_engine = argv[:2] == ["env", kindtools.engine_env()]
        if on_engine:
            argv = argv[2:]
        line = " ".join(argv)
        out, err, rc = "", "", 0
        for prefix, stderr in self.fail.items():
            if line.startswith(prefix):
                return subprocess.CompletedProcess(argv, 1, "", f"Creating...\nERROR: {stderr}\n")
        if argv[:2] == ["docker", "info"]:
            up = self.engine if on_engine else self.daemon
            answer = f"{self.cgroup}\n" if "{{.CgroupVersion}}" in argv else "27.3.1\n"
            out, err, rc = (answer, "", 0) if up else ("", DAEMON_DOWN + "\n", 1)
        elif argv[:2] == ["bash", str(kindtools.ENGINE_SCRIPT)] and argv[2] == "up":
            self.engine = True
        elif argv[:2] == ["docker", "images"]:
            out = "rayconformance/kind-node:v1.36.2-old\n" + NODE_TAG + "\n"
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


def provider(definition, run_dir, runner, keep=False, missing_tools=(), node_image=None, archives=None, cached=None,
             build_tool=lambda t: None):
    clock = Clock()
    p = KindProvider(definitions.load(definition), run_dir, keep=keep, runner=runner, clock=clock, sleep=clock.sleep,
                     which=lambda t: None if t in missing_tools else f"/usr/bin/{t}",
                     cached_tool=lambda t: (cached or {}).get(t), node_image=lambda: node_image,
                     image_archives=lambda: dict(archives or {}), build_tool=build_tool)
    return p, clock


def test_cpu_cluster_is_created_loaded_and_deleted(tmp_path):
    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r)
    cluster = p.up()
    kc, cfg = tmp_path / "kubeconfig", tmp_path / "kind-config.yaml"
    assert r.lines() == [
        "docker info --format {{.ServerVersion}}",
        "kind get clusters",
        "docker info --format {{.CgroupVersion}}",
        f"kind create cluster --name rayconformance-cpu --config {cfg} --kubeconfig {kc} --wait=300s",
        *[f"docker image inspect --format {{{{.Id}}}} {i}" for i in IMAGES],
        "kind load docker-image --name rayconformance-cpu " + " ".join(IMAGES),
    ]
    assert yaml.safe_load(cfg.read_text()) == definitions.load("kind-cpu").section.config
    assert (cluster.provider, cluster.name, cluster.kubeconfig, cluster.gpu) == ("kind", "rayconformance-cpu", kc, False)
    assert cluster.extra["reused"] is False
    p.down()
    assert r.lines()[-1] == f"kind delete cluster --name rayconformance-cpu --kubeconfig {kc}"
    p.down()
    assert len([c for c in r.lines() if c.startswith("kind delete")]) == 1


def test_on_a_cgroup_v1_engine_the_nodes_use_the_cgroupfs_driver(tmp_path):
    """kubelet and containerd both switch (kind's own settings before Kubernetes 1.24), the definition's patches kept;
    a definition that names a kubelet cgroup driver is left as it is."""
    p, _ = provider("kind-cpu", tmp_path, Runner(cgroup="1"))
    p.up()
    cfg = yaml.safe_load((tmp_path / "kind-config.yaml").read_text())
    kubelet = [yaml.safe_load(x) for x in cfg["kubeadmConfigPatches"]]
    assert {"kind": "KubeletConfiguration", "failCgroupV1": False} in kubelet
    assert {"kind": "KubeletConfiguration", "cgroupDriver": "cgroupfs"} in kubelet
    assert cfg["containerdConfigPatches"] == [
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = false\n']
    named = {"kubeadmConfigPatches": ["kind: KubeletConfiguration\ncgroupDriver: systemd\n"]}
    assert with_cgroupfs(json.loads(json.dumps(named))) == named


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
        provider("kind-cpu", tmp_path, Runner(), missing_tools={"kind", "kubectl"})[0].up()
    assert "\n" not in str(e.value) and "`kind`" in str(e.value) and "`kubectl`" in str(e.value)


class Builds:
    """Records the tools built on first use; `fail` makes a build fail as the tool cache's do."""

    def __init__(self, fail=False):
        self.built, self.fail = [], fail

    def __call__(self, name):
        if name == "docker":
            return None
        self.built.append(name)
        if self.fail:
            raise ToolBuildError(f"building {name} v0 failed (exit 1): go: no network; "
                                 f"see /cache/logs/build-{name}.log")
        return Path(f"/cache/{name}/bin/{name}")


def test_a_missing_kind_is_built_into_the_tool_cache_and_used(tmp_path):
    """A kind run on a user's Docker (the default where one answers) gets kind and kubectl without `make
    kind-tools`: built on first use, only the missing ones."""
    r, builds = Runner(), Builds()
    p, _ = provider("kind-cpu", tmp_path, r, missing_tools={"kind"}, build_tool=builds)
    p.up()
    assert builds.built == ["kind"]
    assert r.calls[1][:3] == ["/cache/kind/bin/kind", "get", "clusters"], r.lines()[:2]
    assert p.tools["kubectl"] == "kubectl"


def test_tools_on_path_or_in_the_cache_are_not_built(tmp_path):
    builds = Builds()
    provider("kind-cpu", tmp_path, Runner(), cached={"kind": Path("/c/kind")}, build_tool=builds)[0].up()
    assert builds.built == []


def test_a_failed_build_of_a_missing_tool_is_one_line(tmp_path):
    r = Runner()
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r, missing_tools={"kind", "kubectl"}, build_tool=Builds(fail=True))[0].up()
    msg = str(e.value)
    assert msg == ("provider kind: `kind` not found on PATH, and building it failed: building kind v0 failed (exit 1): "
                   "go: no network; see /cache/logs/build-kind.log"), msg
    assert r.calls == []


def test_nothing_is_built_when_docker_is_missing(tmp_path):
    builds = Builds()
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, Runner(), missing_tools={"docker", "kind"}, build_tool=builds)[0].up()
    assert builds.built == [] and "`docker` not found" in str(e.value) and "`kind` not found" in str(e.value)


def test_the_tool_cache_builds_kind_and_kubectl_only():
    assert set(kindtools.BUILDABLE) == {"kind", "kubectl"} and kindtools.build_tool("docker") is None
    built = (REPO / "clusters" / "local" / "build-tools.sh").read_text()
    assert 'kind) bash "$here/../kind/build-kind-tools.sh" kind' in built  # `ensure("kind", ...)` builds it


ENGINE = f"env {kindtools.engine_env()}"
ENGINE_UP = f"bash {kindtools.ENGINE_SCRIPT} up"
ENGINE_DOWN = f"bash {kindtools.ENGINE_SCRIPT} down"
NODE_TAG = "rayconformance/kind-node:v1.36.3-abc"


def test_a_stopped_docker_daemon_with_no_engine_to_start_is_one_line(tmp_path):
    missing = "engine: cannot start the project's Docker engine: missing dockerd tini (`make kind-deps` installs them)"
    r = Runner(daemon=False, fail={"bash": missing})
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r)[0].up()
    msg = str(e.value)
    assert "\n" not in msg and "no Docker daemon answers" in msg and "Is the docker daemon running?" in msg
    assert "make kind-deps" in msg and "did not start" in msg
    assert r.lines() == ["docker info --format {{.ServerVersion}}",
                         f"{ENGINE} docker info --format {{{{.ServerVersion}}}}", ENGINE_UP]


def test_without_docker_the_project_engine_runs_the_offline_cluster_and_stops(tmp_path):
    archives = {i: tmp_path / f"{n}.tar" for n, i in enumerate(IMAGES)}
    r = Runner(daemon=False, missing={NODE_TAG})
    p, _ = provider("kind-cpu", tmp_path, r, node_image=(NODE_TAG, tmp_path / "node.tar"), archives=archives,
                    cached={"kind": Path("/cache/kind-v0.33.0/bin/kind"), "kubectl": Path("/cache/k/bin/kubectl")})
    cluster = p.up()
    kc, cfg = tmp_path / "kubeconfig", tmp_path / "kind-config.yaml"
    kind = f"{ENGINE} /cache/kind-v0.33.0/bin/kind"
    assert r.lines() == [
        "docker info --format {{.ServerVersion}}",
        f"{ENGINE} docker info --format {{{{.ServerVersion}}}}",
        ENGINE_UP,
        f"{kind} get clusters",
        f"{ENGINE} docker image inspect --format {{{{.Id}}}} {NODE_TAG}",
        f"{ENGINE} docker load -i {tmp_path / 'node.tar'}",
        f"{ENGINE} docker images rayconformance/kind-node --format {{{{.Repository}}}}:{{{{.Tag}}}}",
        f"{ENGINE} docker rmi rayconformance/kind-node:v1.36.2-old",
        f"{ENGINE} docker info --format {{{{.CgroupVersion}}}}",
        f"{kind} create cluster --name rayconformance-cpu --config {cfg} --kubeconfig {kc} --wait=300s "
        f"--image {NODE_TAG}",
        *[f"{kind} load image-archive --name rayconformance-cpu {archives[i]}" for i in IMAGES],
    ]
    net = yaml.safe_load(cfg.read_text())["networking"]
    assert net["apiServerAddress"] == kindtools.ENGINE_API_ADDRESS and 16443 <= net["apiServerPort"] < 17443
    assert net["apiServerPort"] == kindtools.api_server_port("rayconformance-cpu") != kindtools.api_server_port(
        "rayconformance-gpu")
    assert cluster.extra["engine"] == "project" and cluster.extra["nodeImage"] == NODE_TAG
    assert p.kubectl() == "/cache/k/bin/kubectl"
    p.down()
    assert r.lines()[-2:] == [f"{kind} delete cluster --name rayconformance-cpu --kubeconfig {kc}", ENGINE_DOWN]
    p.down()
    assert r.lines().count(ENGINE_DOWN) == 1


def test_a_running_project_engine_is_used_and_left_running(tmp_path):
    r = Runner(daemon=False, engine=True)
    p, _ = provider("kind-cpu", tmp_path, r, node_image=(NODE_TAG, tmp_path / "node.tar"),
                    archives={i: tmp_path / "x.tar" for i in IMAGES})
    p.up()
    p.down()
    assert ENGINE_UP not in r.lines() and ENGINE_DOWN not in r.lines()
    assert f"{ENGINE} docker load -i {tmp_path / 'node.tar'}" not in r.lines()  # already in the engine


def test_the_project_engine_given_by_its_socket_is_used_as_the_projects_and_left_running(tmp_path, monkeypatch):
    """A user whose DOCKER_HOST is the engine's socket (the hosted-runner simulation's runner) talks to it as to its
    own Docker, but the engine's containers are reached at its own address and it pulls nothing."""
    monkeypatch.setenv("DOCKER_HOST", kindtools.engine_env().split("=", 1)[1])
    r = Runner(daemon=True, engine=True)
    p, _ = provider("kind-cpu", tmp_path, r, node_image=(NODE_TAG, tmp_path / "node.tar"),
                    archives={i: tmp_path / "x.tar" for i in IMAGES})
    cluster = p.up()
    p.down()
    net = yaml.safe_load((tmp_path / "kind-config.yaml").read_text())["networking"]
    assert net["apiServerAddress"] == kindtools.ENGINE_API_ADDRESS and cluster.extra["engine"] == "project"
    assert ENGINE_UP not in r.lines() and ENGINE_DOWN not in r.lines()
    assert not kindtools.names_engine("unix:///var/run/docker.sock") and not kindtools.names_engine("tcp://x:2375")


def test_the_project_engine_needs_the_offline_node_image(tmp_path):
    r = Runner(daemon=False)
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r)[0].up()
    msg = str(e.value)
    assert "\n" not in msg and "offline node image is not built" in msg and "make kind-images" in msg
    assert not [c for c in r.lines() if " create cluster" in c] and r.lines()[-1] == ENGINE_DOWN


def test_the_project_engine_pulls_nothing(tmp_path):
    r = Runner(daemon=False, missing={"redis:7.4.0"})
    archives = {i: tmp_path / "x.tar" for i in IMAGES if i != "redis:7.4.0"}
    with pytest.raises(ProviderError) as e:
        provider("kind-cpu", tmp_path, r, node_image=(NODE_TAG, tmp_path / "n.tar"), archives=archives)[0].up()
    assert "image redis:7.4.0 has no offline archive" in str(e.value) and "make kind-images" in str(e.value)
    assert not [c for c in r.lines() if "docker pull" in c]
    assert r.lines()[-2:] == [f"{ENGINE} kind delete cluster --name rayconformance-cpu --kubeconfig "
                              f"{tmp_path / 'kubeconfig'}", ENGINE_DOWN]


def test_on_a_users_docker_archives_are_loaded_and_the_rest_comes_from_docker(tmp_path):
    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r, archives={"redis:7.4.0": tmp_path / "redis.tar"},
                    node_image=(NODE_TAG, tmp_path / "node.tar"))
    p.up()
    lines = r.lines()
    assert "kind load image-archive --name rayconformance-cpu " + str(tmp_path / "redis.tar") in lines
    assert "kind load docker-image --name rayconformance-cpu " + " ".join(IMAGES[1:]) in lines
    assert any(c.startswith("kind create cluster") and c.endswith(f"--image {NODE_TAG}") for c in lines)
    assert "apiServerAddress" not in yaml.safe_load((tmp_path / "kind-config.yaml").read_text())["networking"]
    assert not [c for c in lines if c.startswith(("env ", "bash "))]


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
    with pytest.raises(definitions.DefinitionError, match="kindCluster.fakeGPUs: needs an 'image' and at least one "
                                                          "node labelled nvidia.com/gpu.present"):
        definitions.load(str(path))
    with pytest.raises(ProviderError, match="for provider 'local', not 'kind'"):
        make_provider("kind", "local-cpu", tmp_path)


def test_make_provider_builds_the_kind_provider(tmp_path):
    assert isinstance(make_provider("kind", "kind-gpu", tmp_path), KindProvider)


def docker_engine(path: Path):
    """A unix socket answering Docker's ping, as often as asked, until the returned server is closed."""
    import socket
    import threading

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.mark.parametrize("args, docker, kind_steps", [
    ("", False, False),  # the provider by default: the local bed ...
    ("", True, False),  # ... or kind on a user's Docker: public images, kind built on first use
    ("--provider local", True, False),
    ("--provider kind", False, True),  # on the project's engine: the offline images
    ("--cluster kind-gpu", False, True),
    ("--provider kind", True, False),  # on a user's Docker: nothing offline
])
def test_make_conformance_builds_offline_kind_images_only_for_the_projects_engine(tmp_path, args, docker, kind_steps):
    sock = tmp_path / "docker.sock"
    server = docker_engine(sock) if docker else None
    try:
        r = subprocess.run(["make", "-n", "conformance", f"CONFORMANCE_ARGS={args}"], cwd=REPO, capture_output=True,
                           text=True, timeout=60, env={**os.environ, "DOCKER_HOST": f"unix://{sock}"})
    finally:
        if server:
            server.close()
    assert r.returncode == 0, r.stderr
    steps = [line for line in r.stdout.splitlines() if "clusters/kind/" in line]
    assert bool(steps) == kind_steps, r.stdout


def test_docker_answers_is_asked_without_the_virtualenv(tmp_path):
    sock = tmp_path / "docker.sock"
    env = {"PATH": os.environ["PATH"], "DOCKER_HOST": f"unix://{sock}"}
    script = REPO / "clusters" / "kind" / "docker.py"
    assert subprocess.run(["python3", str(script)], capture_output=True, text=True, env=env).stdout == ""
    server = docker_engine(sock)
    try:
        r = subprocess.run(["python3", str(script)], capture_output=True, text=True, env=env)
    finally:
        server.close()
    assert r.stdout.strip() == str(sock)


def test_an_image_loaded_at_bring_up_is_not_loaded_again(tmp_path):
    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r)
    p.up()
    operator = IMAGES[0]  # an image of the definition's, which the run asks for again
    p.load_images([operator, "rayproject/ray:2.60.0", "rayproject/ray:2.60.0"])
    loads = [c for c in r.lines() if c.startswith("kind load")]
    assert loads[-1] == "kind load docker-image --name rayconformance-cpu rayproject/ray:2.60.0"
    assert sum(operator in c for c in loads) == 1


def test_kill_container_stops_it_without_grace_in_its_node(tmp_path):
    from kubernetes.client import (V1ContainerState, V1ContainerStateRunning, V1ContainerStatus, V1ObjectMeta,
                                   V1Pod, V1PodSpec, V1PodStatus)

    def pod(running: bool):
        state = V1ContainerState(running=V1ContainerStateRunning() if running else None)
        status = V1ContainerStatus(name="ray-job-submitter", container_id="containerd://abc123", state=state,
                                   image="i", image_id="i", ready=running, restart_count=0)
        return V1Pod(metadata=V1ObjectMeta(name="head"), spec=V1PodSpec(containers=[], node_name="rc-worker"),
                     status=V1PodStatus(container_statuses=[status]))

    r = Runner()
    p, _ = provider("kind-cpu", tmp_path, r)
    assert p.supports("kill_container")
    p.kill_container(pod(True), "ray-job-submitter")
    assert r.lines()[-1] == "docker exec rc-worker crictl stop --timeout 0 abc123"
    with pytest.raises(ProviderError, match="container ray-job-submitter of Pod head is not running"):
        p.kill_container(pod(False), "ray-job-submitter")
    with pytest.raises(ProviderError, match="container other of Pod head is not running"):
        p.kill_container(pod(True), "other")


def test_kubectl_is_built_alone_and_found_where_either_build_put_it(monkeypatch, tmp_path):
    """A kind run on a user's Docker without kubectl builds kubectl alone (build-tools.sh `kubectl`), not the local
    bed's control plane; the local bed's kubectl is used where it was built."""
    from rayconformance.clusters import kind as kindtools
    from rayconformance.clusters import toolcache

    monkeypatch.setattr(toolcache, "CACHE", tmp_path)
    k8s = toolcache.versions()["KUBERNETES_VERSION"]
    assert kindtools.BUILDABLE["kubectl"] == ("kubectl", "KUBERNETES_VERSION")
    assert kindtools.cached_tool("kubectl") is None
    for component in ("kubectl", "kubernetes"):
        binary = tmp_path / f"{component}-{k8s}" / "bin" / "kubectl"
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
        assert kindtools.cached_tool("kubectl") == binary
    built = []
    monkeypatch.setattr(kindtools, "ensure", lambda c, v, m: built.append((c, v, m)) or tmp_path / f"{c}-{v}")
    assert kindtools.build_tool("kubectl") == tmp_path / f"kubectl-{k8s}" / "bin" / "kubectl"
    assert built == [("kubectl", k8s, "bin/kubectl")]
