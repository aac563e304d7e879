"""clusters/kind: image archives written without Docker, and the runtime wrapper's capability filter."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from rayconformance.clusters.kind import imagetar

REPO = Path(__file__).resolve().parents[2]


def load_wrapper():
    spec = importlib.util.spec_from_file_location("runc_wrapper", REPO / "clusters/kind/runc-wrapper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_archive(path: Path) -> tuple[list[dict], dict, dict[str, tarfile.TarFile]]:
    t = tarfile.open(path)
    manifest = json.load(t.extractfile("manifest.json"))
    config = json.load(t.extractfile(manifest[0]["Config"]))
    return manifest, config, t


def test_an_archive_has_the_names_layers_and_config_docker_load_reads(tmp_path):
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc" / "hostname").write_text("x\n")
    (rootfs / ".complete").touch()
    binary = tmp_path / "tool"
    binary.write_text("#!/bin/sh\n")
    out = tmp_path / "img.tar"
    cfg = imagetar.ImageConfig(entrypoint=["/manager"], user="65532:65532", workdir="/")
    image_id = imagetar.build(out, ["quay.io/kuberay/operator:v1.6.1"], [rootfs], [f"{binary}=/manager"], cfg,
                              layer_cache=tmp_path / "layers")
    manifest, config, t = read_archive(out)
    assert manifest[0]["RepoTags"] == ["quay.io/kuberay/operator:v1.6.1"]
    assert manifest[0]["Config"] == f"{image_id}.json" and len(manifest[0]["Layers"]) == 2
    assert config["config"]["Entrypoint"] == ["/manager"] and config["config"]["User"] == "65532:65532"
    assert config["rootfs"]["diff_ids"] == [f"sha256:{p.split('/')[0]}" for p in manifest[0]["Layers"]]
    top = tarfile.open(fileobj=t.extractfile(manifest[0]["Layers"][1]))
    member = top.getmember("manager")
    assert member.mode == 0o755 and member.uid == 0
    base = tarfile.open(fileobj=t.extractfile(manifest[0]["Layers"][0]))
    assert "./etc/hostname" in base.getnames()


def test_a_rootfs_layer_is_reused_until_its_stamp_changes(tmp_path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    (rootfs / ".complete").touch()
    cfg = imagetar.ImageConfig()
    imagetar.build(tmp_path / "a.tar", ["a:1"], [rootfs], [], cfg, layer_cache=tmp_path / "layers")
    imagetar.build(tmp_path / "b.tar", ["b:1"], [rootfs], [], cfg, layer_cache=tmp_path / "layers")
    assert len(list((tmp_path / "layers").glob("dir-*.tar"))) == 1
    assert read_archive(tmp_path / "a.tar")[1]["rootfs"] == read_archive(tmp_path / "b.tar")[1]["rootfs"]


def test_names_need_a_tag(tmp_path):
    with pytest.raises(ValueError, match="no tag"):
        imagetar.write_archive(tmp_path / "x.tar", ["localhost:5000/ray"], [], imagetar.ImageConfig())


def test_the_runtime_wrapper_drops_capabilities_outside_the_bounding_set(tmp_path, monkeypatch):
    w = load_wrapper()
    caps = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    spec = {"process": {"capabilities": {"bounding": caps, "effective": caps}}}
    (bundle / "config.json").write_text(json.dumps(spec))
    (tmp_path / "process.json").write_text(json.dumps({"capabilities": {"permitted": caps}}))
    ran = []
    monkeypatch.setattr(w, "missing_caps", lambda: {"CAP_SYS_RESOURCE"})
    monkeypatch.setattr(w.os, "execv", lambda path, argv: ran.append(argv))
    w.main(["--root", "/run/r", "create", "--bundle", str(bundle), "id1"])
    w.main(["exec", "--process", str(tmp_path / "process.json"), "id1"])
    spec = json.loads((bundle / "config.json").read_text())
    assert spec["process"]["capabilities"] == {"bounding": ["CAP_CHOWN", "CAP_SYS_ADMIN"],
                                               "effective": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}
    assert json.loads((tmp_path / "process.json").read_text())["capabilities"]["permitted"] == ["CAP_CHOWN",
                                                                                               "CAP_SYS_ADMIN"]
    assert ran[0][1:] == ["--root", "/run/r", "create", "--bundle", str(bundle), "id1"]


def test_the_runtime_wrapper_reads_the_bounding_set_of_this_process():
    w = load_wrapper()
    missing = w.missing_caps()
    assert missing <= {"CAP_" + c for c in w.CAPS}


def test_the_node_images_storage_is_the_provisioners_manifest_with_kinds_changes():
    from rayconformance.clusters.kind import storage
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: local-path-provisioner, namespace: local-path-storage}
spec:
  template:
    spec:
      containers:
      - {name: local-path-provisioner, image: "rancher/local-path-provisioner:v0", command: [local-path-provisioner]}
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
  config.json: '{"nodePathMap": []}'
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata: {name: helper-pod}
    spec:
      containers:
      - {name: helper-pod, image: busybox, imagePullPolicy: Always}
"""
    deploy, sc, cm = storage.kind_objects(manifest, "offline/provisioner:v0", "offline/helper:1")
    assert (sc["metadata"]["name"], sc["metadata"]["annotations"]) == \
        ("standard", {"storageclass.kubernetes.io/is-default-class": "true"})
    pod = deploy["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "offline/provisioner:v0"
    assert {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
            "effect": "NoSchedule"} in pod["tolerations"]
    helper = yaml.safe_load(cm["data"]["helperPod.yaml"])["spec"]["containers"][0]
    assert (helper["image"], helper["imagePullPolicy"]) == ("offline/helper:1", "IfNotPresent")
    assert json.loads(cm["data"]["config.json"])["nodePathMap"][0]["paths"] == ["/var/local-path-provisioner"]


def test_the_operator_image_builds_without_root_and_the_debian_images_say_they_need_it(tmp_path):
    """A CI runner's user (not root) makes its operator tree build's image; the Debian-based images need root."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text('#!/bin/sh\n[ "$1" = -u ] && { echo 1001; exit 0; }\nexec /usr/bin/id "$@"\n')
    (fake / "id").chmod(0o755)
    cache = tmp_path / "cache"
    (cache / "kuberay-tree-abc" / "bin").mkdir(parents=True)
    (cache / "kuberay-tree-abc" / "bin" / "ray-operator").write_text("#!/bin/sh\n")
    (cache / "kuberay-tree-abc" / "bin" / "ray-operator").chmod(0o755)
    env = {"PATH": f"{fake}:{os.environ['PATH']}", "RAYCONF_CACHE": str(cache), "KUBERAY_IMAGE_TAGS": "tree-abc"}
    script = REPO / "clusters" / "kind" / "build-app-images.sh"
    r = subprocess.run(["bash", str(script), "kuberay"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    index = (cache / "kind-images" / "index.tsv").read_text()
    assert index == f"quay.io/kuberay/operator:tree-abc\t{cache}/kind-images/kuberay-operator-tree-abc.tar\n"
    r = subprocess.run(["bash", str(script), "ray"], capture_output=True, text=True, env=env)
    assert (r.returncode, r.stderr) == (2, "build-app-images: image ray needs root (debootstrap, chroot)\n")
