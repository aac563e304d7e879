"""KubeRay's light-weight RayJob submitter, beside the operator it is built with: build-tools.sh builds its
bin/submitter (also alone, into a build cached without it), the local bed's image rule runs it as the submitter
image's /submitter, a profile names the image (`install.<provider>.submitterImage`), and a patched build runs it
under the build's tag."""
from __future__ import annotations

from pathlib import Path

import pytest

from rayconformance.clusters.definition import SectionError
from rayconformance.clusters.local import section
from rayconformance.clusters.local.nodeagent import images
from rayconformance.operator import install_section, profiles
from rayconformance.operator.install_section import built_image
from tests.unit.test_build_tools_prefetch import calls, run

SUBMITTER = "quay.io/kuberay/submitter"  # the repository KubeRay's release workflow pushes the submitter to


@pytest.mark.parametrize("definition", ["local-cpu", "local-gpu"])
def test_the_submitter_image_runs_the_builds_submitter_as_slash_submitter(definition, tmp_path, monkeypatch):
    monkeypatch.setattr(images, "CACHE", tmp_path)
    bindir = tmp_path / "kuberay-v1.6.1" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "ray-operator").touch()
    im = images.Images(section.load(definition))

    # not built yet: an image that cannot be pulled
    with pytest.raises(images.ImageError, match=r'failed to pull image .*submitter:v1\.6\.1.*bin/submitter missing'):
        im.resolve(f"{SUBMITTER}:v1.6.1")

    (bindir / "submitter").touch()
    rt = im.resolve(f"{SUBMITTER}:v1.6.1")
    args = ["--runtime-env-json", "{}", "--", "python", "x.py"]
    assert rt.argv(["/submitter"], args) == [str(bindir / "submitter"), *args]
    assert rt.argv(None, args)[0] == str(bindir / "submitter")  # the image's entrypoint
    assert (rt.uid, rt.gid, rt.workdir) == (65532, 65532, "/")
    # the operator image of the same build still runs its ray-operator as /manager
    op = im.resolve("quay.io/kuberay/operator:v1.6.1")
    assert op.argv(["/manager"], []) == [str(bindir / "ray-operator")] and op.image_id == "kuberay://v1.6.1"


def test_an_image_rules_binary_is_a_file_of_its_build():
    rule = section.parse_rule({"match": "x:*", "runtime": "kuberay", "binary": "submitter"}, "images[0]")
    assert rule.binary == "submitter"
    tool = section.parse_rule({"match": "x:*", "runtime": "tool", "tool": "localpath",
                               "binary": "local-path-provisioner"}, "images[0]")
    assert tool.build("x:v1") == ("localpath", "v1", "bin/local-path-provisioner")
    for bad in ({"runtime": "host", "binary": "submitter"},
                {"runtime": "kuberay", "binary": "../etc/passwd"}):
        with pytest.raises(SectionError, match="binary"):
            section.parse_rule({"match": "x:*", **bad}, "images[0]")


def _module(tmp_path: Path, version: str, submitter: bool) -> Path:
    """The ray-operator module of `version` where the fake go's GOMODCACHE is."""
    src = tmp_path / "mod" / f"github.com/ray-project/kuberay/ray-operator@{version}"
    (src / "config").mkdir(parents=True)
    if submitter:
        (src / "rayjob-submitter" / "cmd").mkdir(parents=True)
    return src


def test_build_tools_builds_the_submitter_with_a_release_and_alone_into_a_cached_one(tmp_path):
    _module(tmp_path, "v1.6.1", submitter=True)
    r = run(tmp_path, "kuberay@v1.6.1")
    built = tmp_path / "cache" / "kuberay-v1.6.1" / "bin"
    assert r.returncode == 0 and (built / "ray-operator").exists() and (built / "submitter").exists(), r.stdout + r.stderr
    assert any(c[2].endswith("./rayjob-submitter/cmd") and c[2].startswith("build") for c in calls(tmp_path))

    # a build cached before the submitter was built: only the submitter is built
    (built / "submitter").unlink()
    (tmp_path / "go.log").unlink()
    r = run(tmp_path, "kuberay@v1.6.1")
    assert r.returncode == 0 and (built / "submitter").exists() and "kuberay v1.6.1 cached" in r.stdout, r.stdout
    assert [c[2].split()[0] for c in calls(tmp_path) if c[2].split()[0] in ("build", "install")] == ["build"]


def test_build_tools_marks_a_release_without_a_submitter_and_looks_no_further(tmp_path):
    _module(tmp_path, "v1.4.2", submitter=False)
    r = run(tmp_path, "kuberay@v1.4.2")
    built = tmp_path / "cache" / "kuberay-v1.4.2" / "bin"
    assert r.returncode == 0 and (built / "ray-operator").exists() and not (built / "submitter").exists()
    assert "no submitter" in r.stdout and (built / ".no-submitter").exists()
    (tmp_path / "go.log").unlink()
    r = run(tmp_path, "kuberay@v1.4.2")
    assert r.returncode == 0 and "kuberay v1.4.2 cached" in r.stdout and "submitter" not in r.stdout


def test_build_tools_builds_a_patched_release_with_its_patched_submitter(tmp_path, monkeypatch):
    src = _module(tmp_path, "v1.6.1", submitter=True)
    (src / "rayjob-submitter" / "cmd" / "main.go").write_text("package main\n// exit 1\n")
    patch = tmp_path / "wrong.patch"
    patch.write_text("--- a/rayjob-submitter/cmd/main.go\n+++ b/rayjob-submitter/cmd/main.go\n@@ -1,2 +1,2 @@\n"
                     " package main\n-// exit 1\n+// exit 0\n")
    monkeypatch.setenv("KUBERAY_BASE", "v1.6.1")
    monkeypatch.setenv("KUBERAY_PATCH", str(patch))
    r = run(tmp_path, "kuberay@v1.6.1-wrong-0")
    built = tmp_path / "cache" / "kuberay-v1.6.1-wrong-0" / "bin"
    assert r.returncode == 0 and (built / "ray-operator").exists() and (built / "submitter").exists(), r.stdout + r.stderr
    builds = [c for c in calls(tmp_path) if c[2].startswith("build")]
    assert len(builds) == 2, builds  # the submitter and the operator, both from the patched copy


HEAD = """apiVersion: rayconformance.io/v1alpha1
kind: OperatorProfile
name: custom
implementation: {organization: o, project: p, url: https://example.invalid, version: v1}
"""


def parse(text: str):
    import yaml

    return profiles.parse(yaml.safe_load(HEAD + text), Path("custom.yaml"))


def test_a_profile_claiming_the_light_weight_submitter_names_its_image():
    p = parse(f"install: {{local: {{image: quay.io/kuberay/operator:v1.6.1, submitterImage: {SUBMITTER}:v1.6.1}}}}\n"
              "features: [RayJobLightweightSubmitter]\n")
    assert p.install["local"].submitter_image == f"{SUBMITTER}:v1.6.1"
    with pytest.raises(profiles.ProfileError, match="install.local names no 'submitterImage'"):
        parse("install: {local: {image: quay.io/kuberay/operator:v1.6.1}}\nfeatures: [RayJobLightweightSubmitter]\n")
    with pytest.raises(profiles.ProfileError, match="submitterImage must be an image with a tag"):
        parse(f"install: {{local: {{submitterImage: {SUBMITTER}}}}}\nfeatures: []\n")


@pytest.mark.parametrize("name", ["kuberay-v1.5.0", "kuberay-v1.6.1", "kuberay-v1.6.2", "kuberay-v1.7.0"])
def test_kuberay_profiles_with_the_submitter_name_its_image_with_the_operators_tag(name):
    p = profiles.load(name)
    assert "RayJobLightweightSubmitter" in p.features
    for how in p.install.values():
        assert how.submitter_image == how.image.replace("/operator:", "/submitter:")


def test_releases_before_the_submitter_claim_none():
    for name in ("kuberay-v1.4.0", "kuberay-v1.4.2"):
        p = profiles.load(name)
        assert "RayJobLightweightSubmitter" not in p.features
        assert not any(how.submitter_image for how in p.install.values())


def test_a_patched_builds_submitter_runs_under_the_builds_tag(tmp_path):
    patch = tmp_path / "wrong.patch"
    patch.write_text("x")
    spec = install_section.parse({"source": {"name": "kuberay", "version": "v1.6.1", "patch": str(patch)},
                                  "image": "quay.io/kuberay/operator:v1.6.1", "submitterImage": f"{SUBMITTER}:v1.6.1"},
                                 "install.local")
    operator = built_image(spec, spec.image, tmp_path, "local")
    submitter = built_image(spec, spec.submitter_image, tmp_path, "local")
    assert operator.startswith("quay.io/kuberay/operator:v1.6.1-wrong-")
    assert submitter == operator.replace("/operator:", "/submitter:")
    plain = install_section.parse({"submitterImage": f"{SUBMITTER}:v1.6.1"}, "install.local")
    assert built_image(plain, plain.submitter_image, tmp_path, "local") == f"{SUBMITTER}:v1.6.1"


@pytest.mark.parametrize("provider, tag", [("local", "tree-59d663aeec13"), ("kind", "tree-59d663aeec13"),
                                           ("existing", "v1.7.0")])
def test_a_source_trees_build_runs_under_the_trees_tag_where_the_project_build_runs(tmp_path, provider, tag):
    tree = {"name": "kuberay", "repository": "https://github.com/ray-project/kuberay", "ref": "v1.7.0"}
    spec = install_section.parse({"source": tree, "image": "localhost:5000/operator:v1.7.0"}, "install.local")
    assert built_image(spec, spec.image, tmp_path, provider, "tree-59d663aeec13") == f"localhost:5000/operator:{tag}"
    assert built_image(spec, spec.image, tmp_path, provider) == "localhost:5000/operator:v1.7.0"  # no tree given
