"""The provider registry: providers are the modules of src/rayconformance/providers; capabilities are methods a provider
may lack, asked for by name; --provider and --cluster pick each other."""
from __future__ import annotations

import pytest

from rayconformance import providers
from rayconformance.providers import CAPABILITIES, Provider, ProviderError, Unsupported


def test_the_registry_is_the_package():
    assert providers.names() == ["existing", "kind", "local"]
    for name in providers.names():
        cls = providers.provider_class(name)
        assert issubclass(cls, Provider) and cls.name == name


def test_unknown_provider_is_one_line():
    with pytest.raises(ProviderError, match="unknown provider 'nope'; use --provider with one of: existing, kind, local"):
        providers.provider_class("nope")


def test_capabilities_are_what_a_provider_overrides(tmp_path):
    local = providers.make_provider("local", None, tmp_path)
    existing = providers.make_provider("existing", None, tmp_path)
    assert {c for c in CAPABILITIES if local.supports(c)} == {"load_images", "cut_pod_network", "kill_container",
                                                              "gpu_nodes"}
    assert not any(existing.supports(c) for c in CAPABILITIES)
    with pytest.raises(Unsupported, match="provider existing cannot cut a running Pod's network"):
        existing.require("cut_pod_network")
    with pytest.raises(Unsupported):
        existing.gpu_nodes()
    with pytest.raises(ValueError, match="unknown provider capability 'teleport'"):
        local.supports("teleport")


def test_provider_alone_picks_its_default_definition_and_definition_alone_its_provider():
    assert providers.resolve("kind", None)[1].name == "kind-cpu"
    assert providers.resolve(None, None)[1].name == "local-gpu"
    assert providers.resolve(None, "kind-gpu")[0] == "kind"
    assert providers.resolve("existing", "local-cpu") == ("existing", None)
    with pytest.raises(ProviderError, match="is for provider 'local', not 'kind'"):
        providers.resolve("kind", "local-gpu")


def test_every_shipped_definition_makes_its_provider(tmp_path):
    from rayconformance.clusters.definition import CLUSTERS_DIR
    shipped = sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml"))
    assert {"kind-cpu", "kind-cpu-open", "kind-gpu", "local-cpu", "local-gpu"} <= set(shipped)
    for name in shipped:
        provider = providers.make_provider(None, name, tmp_path)
        assert provider.definition.name == name


def test_local_reports_gpu_nodes_and_unmapped_images(tmp_path, monkeypatch):
    from rayconformance.clusters.local.nodeagent import images

    made = []
    monkeypatch.setattr(images, "ensure_ray_venv", made.append)
    gpu = providers.make_provider("local", "local-gpu", tmp_path)
    assert gpu.gpu_nodes() and all(n > 0 for n in gpu.gpu_nodes().values())
    assert providers.make_provider("local", "local-cpu", tmp_path).gpu_nodes() == {}
    gpu.load_images(["rayproject/ray:2.46.0", "redis:7.4.0"])
    assert made == ["2.46.0"]  # the Ray image's venv, before any Pod needs it
    with pytest.raises(ProviderError, match="no image rule .* maps nginx:1"):
        gpu.load_images(["nginx:1"])


def test_prepare_images_loads_what_the_objects_run_where_the_provider_loads_images(tmp_path, monkeypatch):
    deployment = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"image": "a:1"}]}}}}
    local, existing = (providers.make_provider(name, None, tmp_path) for name in ("local", "existing"))
    loaded = []
    monkeypatch.setattr(type(local), "load_images", lambda self, images: loaded.append(images))
    local.prepare_images([deployment])
    existing.prepare_images([deployment])  # its nodes pull images themselves: nothing to do
    assert loaded == [["a:1"]]


def test_attach_gives_a_handle_that_never_takes_the_cluster_down(tmp_path):
    cluster = providers.Cluster(provider="local", name="local-cpu", kubeconfig=tmp_path / "kubeconfig",
                                definition=providers.resolve("local", None)[1])
    p = providers.attach(cluster, tmp_path)
    assert p.cluster is cluster and p.keep
    p.down()  # nothing brought up, nothing taken down


def test_a_provider_without_definitions_ignores_cluster():
    assert providers.resolve("existing", "no-such-definition") == ("existing", None)


def test_local_adopts_a_bed_that_is_up_and_leaves_it_up(tmp_path):
    kubeconfig = tmp_path / "bed.kubeconfig"
    local = providers.make_provider("local", "local-gpu", tmp_path)
    cluster = local.adopt(kubeconfig)
    assert (cluster.provider, cluster.name, cluster.kubeconfig, cluster.gpu) == ("local", "local-gpu", kubeconfig, True)
    assert cluster.definition is local.definition and cluster.extra == {"attached": True}
    local.down()  # nothing brought up here: the bed stays
    with pytest.raises(ProviderError, match="provider existing cannot attach to a cluster that is already up"):
        providers.make_provider("existing", None, tmp_path).adopt(kubeconfig)


def test_default_provider_is_kind_where_a_docker_engine_answers_else_local(tmp_path, monkeypatch):
    import socket
    import threading

    from rayconformance import providers

    path = tmp_path / "docker.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def answer():
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    name, why = providers.default_provider()
    assert name == "kind" and str(path) in why, why
    server.close()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'none.sock'}")
    assert providers.default_provider()[0] == "local"
