"""Image rules carry what a Pod relies on from its image; securityContext identity and capabilities; what the
local test bed reports as not honored; the pull error of a Ray version that does not exist."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rayconformance.clusters import definition
from rayconformance.clusters.local import section
from rayconformance.clusters.local.nodeagent import images, security


def _pod(containers, **spec):
    return {"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": containers, **spec}}


@pytest.mark.parametrize("name", ["local-cpu", "local-gpu"])
def test_every_image_rule_states_workdir_and_user(name):
    d = section.load(name)
    for r in d.images:
        assert r.working_dir.startswith("/"), r.match
        assert r.user, r.match
    redis = d.image_rule("redis:7.4.0")
    assert redis.working_dir == "/data" and redis.volumes == ("/data",)
    ray = d.image_rule("rayproject/ray:2.52.0")
    assert (ray.working_dir, ray.user) == ("/home/ray", "1000:100")


def test_rule_fields_reach_the_runtime():
    rule = section.ImageRule("redis:*", "host", ("redis-server",), env=(("A", "1"),), working_dir="/data",
                                volumes=("/data",), user="999:998")
    rt = images.Runtime("host", "redis:7", "host://redis:7", images.BASE_PATH, ["redis-server"])
    images.apply_rule(rt, rule)
    assert (rt.workdir, rt.volumes, rt.uid, rt.gid, rt.env) == ("/data", ["/data"], 999, 998, {"A": "1"})


def test_malformed_rule_fields_are_refused(tmp_path):
    base = ("kind: ClusterDefinition\nprovider: local\nnodes: [{name: n1}]\nimages:\n"
            "  - {match: 'x:*', runtime: host, %s}\n")
    for bad in ("workingDir: data", "volumes: [data]", "user: ray"):
        p = tmp_path / "d.yaml"
        p.write_text(base % bad)
        with pytest.raises(definition.DefinitionError):
            definition.load(str(p))


def test_identity_from_image_and_security_context():
    have = set(security.CAPS)
    c = {"name": "c"}
    ident = security.identity(_pod([c]), c, 1000, 100, have)
    assert (ident.uid, ident.gid, ident.groups) == (1000, 100, [100])
    assert ident.caps == sorted(security.CAP_NUM[n] for n in security.DEFAULT_CAPS)
    c = {"name": "c", "securityContext": {"runAsUser": 7, "capabilities": {"add": ["SYS_PTRACE"], "drop": ["KILL"]},
                                          "allowPrivilegeEscalation": False}}
    ident = security.identity(_pod([c], securityContext={"runAsGroup": 8, "fsGroup": 9, "supplementalGroups": [10]}),
                              c, 1000, 100, have)
    assert (ident.uid, ident.gid, ident.groups, ident.no_new_privs) == (7, 8, [8, 10, 9], True)
    assert security.CAP_NUM["SYS_PTRACE"] in ident.caps and security.CAP_NUM["KILL"] not in ident.caps
    c = {"name": "c", "securityContext": {"capabilities": {"drop": ["ALL"]}}}
    assert security.identity(_pod([c]), c, 0, 0, have).caps == []
    c = {"name": "c", "securityContext": {"privileged": True}}
    assert security.identity(_pod([c]), c, 0, 0, have).caps is None


def test_run_as_non_root_refuses_root():
    c = {"name": "c"}
    with pytest.raises(security.SecurityError, match="image will run as root"):
        security.identity(_pod([c], securityContext={"runAsNonRoot": True}), c, 0, 0, set())
    security.identity(_pod([c], securityContext={"runAsNonRoot": True}), c, 65532, 65532, set())


def test_not_honored_lists_what_the_bed_cannot_give():
    c = {"name": "c", "securityContext": {"readOnlyRootFilesystem": True,
                                          "capabilities": {"add": ["SYS_RESOURCE", "SYS_PTRACE"]},
                                          "seccompProfile": {"type": "RuntimeDefault"}},
         "resources": {"limits": {"memory": "1Gi"}}, "livenessProbe": {"grpc": {"port": 1}},
         "ports": [{"containerPort": 80, "hostPort": 8080}], "restartPolicy": "Never",
         "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}
    out = " | ".join(security.not_honored(_pod([c], shareProcessNamespace=True),
                                          set(security.CAPS) - {"SYS_RESOURCE"}))
    for want in ("readOnlyRootFilesystem", "SYS_RESOURCE", "seccompProfile RuntimeDefault", "limits memory",
                 "livenessProbe.grpc", "hostPort 8080", "shareProcessNamespace", "restartPolicyRules"):
        assert want in out
    assert "SYS_PTRACE" not in out  # honored
    assert security.not_honored(_pod([{"name": "c", "image": "busybox"}]), set(security.CAPS)) == []


def test_unknown_ray_version_reads_as_not_found():
    err = ("ERROR: Could not find a version that satisfies the requirement ray[default,serve]==2.99.0 "
           "(from versions: 2.52.0, 2.53.0, 2.60.0)\nERROR: No matching distribution found for "
           "ray[default,serve]==2.99.0\n")
    msg = images.pip_failure("2.99.0", err)
    assert msg.startswith("not found: Ray 2.99.0 does not exist") and "2.60.0" in msg
    assert "pip install" in images.pip_failure("2.52.0", "ERROR: connection refused")
    with pytest.raises(images.ImageError, match="does not name a Ray release"):
        images.ray_version("rayproject/ray:nightly")


def test_local_path_storage_objects_are_upstreams_with_kinds_two_changes(tmp_path):
    from rayconformance.clusters.local import storage
    manifest = """
apiVersion: v1
kind: Namespace
metadata: {name: local-path-storage}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-path}
provisioner: rancher.io/local-path
---
kind: ConfigMap
apiVersion: v1
metadata: {name: local-path-config, namespace: local-path-storage}
data:
  config.json: |-
    {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["/opt/local-path-provisioner"]}]}
  setup: "mkdir"
"""
    objs = storage.objects(manifest, tmp_path / "lp")
    assert [o["kind"] for o in objs] == ["Namespace", "StorageClass", "ConfigMap"]
    assert objs[1]["metadata"]["annotations"] == {storage.DEFAULT_CLASS: "true"}
    assert str(tmp_path / "lp") in objs[2]["data"]["config.json"] and objs[2]["data"]["setup"] == "mkdir"


def test_ray_venv_only_root_can_run_keeps_root_and_says_so(tmp_path):
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    (private / "bin" / "python3").write_text("")
    (private / "bin" / "python3").chmod(0o755)
    private.chmod(0o700)
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").symlink_to(private / "bin" / "python3")
    rule = section.ImageRule("rayproject/ray:*", "ray", user="1000:100")
    rt = images.Runtime("ray", "rayproject/ray:2.46.0", "ray://2.46.0", f"{venv}:{images.BASE_PATH}")
    images.apply_rule(rt, rule)
    assert (rt.uid, rt.gid) == (0, 0) and "1000:100" in rt.note
    private.chmod(0o755)
    tmp_path.chmod(0o755)
    rt = images.Runtime("ray", "rayproject/ray:2.46.0", "ray://2.46.0", f"{venv}:{images.BASE_PATH}")
    images.apply_rule(rt, rule)
    if images.usable_by_all(venv / "python3"):  # (every ancestor of tmp_path traversable)
        assert (rt.uid, rt.gid, rt.note) == (1000, 100, "")


def test_ray_venv_only_root_can_run_is_not_ready_and_is_remade(tmp_path, monkeypatch):
    """A complete venv whose interpreter a non-root user cannot run is not ready: ensure_ray_venv remakes it with
    the system's Python rather than running the Pod as root."""
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    (private / "bin" / "python3").write_text("")
    (private / "bin" / "python3").chmod(0o755)
    private.chmod(0o700)
    venvs = tmp_path / "venvs"
    (venvs / "ray-2.46.0" / "bin").mkdir(parents=True)
    (venvs / "ray-2.46.0" / "bin" / "python3").symlink_to(private / "bin" / "python3")
    (venvs / "ray-2.46.0" / images.MARKER).write_text("old\n")
    monkeypatch.setattr(images, "VENVS", venvs)
    assert not images.venv_ready("2.46.0")
    calls = []

    def fake_run(argv, **kw):
        calls.append(argv)
        if argv[1:3] == ["-m", "venv"]:
            (Path(argv[3]) / "bin").mkdir(parents=True)
            (Path(argv[3]) / "bin" / "python3").write_text("")
            (Path(argv[3]) / "bin" / "python3").chmod(0o755)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(images.subprocess, "run", fake_run)
    monkeypatch.setattr(images, "usable_by_all", lambda p: "private" not in str(Path(p).resolve()))
    venv = images.ensure_ray_venv("2.46.0", python="/usr/bin/python3")
    assert calls[0][:3] == ["/usr/bin/python3", "-m", "venv"]
    assert not (venv / "bin" / "python3").is_symlink() and (venv / images.MARKER).exists()
    assert images.venv_ready("2.46.0")



@pytest.mark.parametrize("tag, cache_dir", [("v1.6.2", "kuberay-v1.6.2"), ("1.6.2", "kuberay-v1.6.2"),
                                            ("tree-59d663aeec13", "kuberay-tree-59d663aeec13"),
                                            ("tree-59d663aeec13-dirty-53e3ccd6",
                                             "kuberay-tree-59d663aeec13-dirty-53e3ccd6")])
def test_the_operator_image_tag_picks_a_release_or_a_source_tree_build(tag, cache_dir, tmp_path, monkeypatch):
    binary = tmp_path / cache_dir / "bin" / "ray-operator"
    binary.parent.mkdir(parents=True)
    binary.touch()
    monkeypatch.setattr(images, "CACHE", tmp_path)
    rt = images.Images(section.load("local-cpu")).resolve(f"quay.io/kuberay/operator:{tag}")
    assert str(binary) in str(vars(rt))


def test_the_provider_and_the_node_agent_agree_on_what_is_built(tmp_path, monkeypatch):
    """One marker per rule: the file `load_images` builds until it exists is the one a Pod's pull needs, so a
    tool whose binary is not named after it (local-path-provisioner) is not rebuilt, nor pulled half-built."""
    from rayconformance.clusters import toolcache
    from rayconformance.providers import make_provider

    monkeypatch.setattr(images, "CACHE", tmp_path)
    monkeypatch.setattr(toolcache, "CACHE", tmp_path)
    built = []

    def ensure(component, version, marker, env=None):
        built.append((component, version, marker))
        (tmp_path / f"{component}-{version}" / marker).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{component}-{version}" / marker).touch()
        return tmp_path / f"{component}-{version}"

    monkeypatch.setattr(toolcache, "ensure", ensure)
    provider = make_provider("local", "local-gpu", tmp_path / "run")
    store = images.Images(provider.section)
    for rule in provider.section.images:
        if rule.runtime not in ("kuberay", "tool"):
            continue
        image = rule.match.replace("*", "v9.9.9")
        assert rule.build(image)[0] == (rule.tool or "kuberay")
        provider.load_images([image])
        assert store.resolve(image).image == image  # a pull finds what the load built
    assert built and all(m.startswith("bin/") for _, _, m in built)  # every shipped rule names its binary
    assert section.ImageRule("x:*", "tool", ("x",), tool="x").build("x:1") == ("x", "1", "bin/x")
    assert section.ImageRule("x:*", "tool", tool="x").build("x:1") == ("x", "1", "bin")
    assert section.ImageRule("x:*", "tool", tool="x", binary="y").build("x:1") == ("x", "1", "bin/y")
    assert section.ImageRule("k:*", "kuberay").build("k:1.6.1") == ("kuberay", "v1.6.1", "bin/ray-operator")
    assert section.image_tag("a/b:1@sha256:00") == "1" and section.image_tag("host:5000/b") == "latest"
