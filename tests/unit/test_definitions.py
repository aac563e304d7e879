"""Cluster definitions: the common loader knows no provider; each provider's section is parsed by its own module;
a definition is resolved once and travels as a value (xdist workers and environment.json read no file)."""
from __future__ import annotations

import inspect
import json
import shutil

import pytest
import yaml

from rayconformance import providers
from rayconformance.clusters import definition
from rayconformance.clusters.definition import CLUSTERS_DIR, ClusterDefinition, DefinitionError
from rayconformance.clusters.kind.section import KindSection
from rayconformance.clusters.local.section import LocalSection
from rayconformance.run.environment import Environment

from .conftest import usage_error

SHIPPED = sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_definition_loads_and_travels_as_json(name):
    d = definition.load(name)
    assert d.name == name and d.section is not None
    assert ClusterDefinition.from_dict(json.loads(json.dumps(d.to_dict()))) == d


def test_sections_are_registered_by_their_providers_modules():
    assert isinstance(definition.load("local-gpu").section, LocalSection)
    assert isinstance(definition.load("kind-gpu").section, KindSection)
    assert definition.load("local-gpu").has_gpus and definition.load("kind-gpu").has_gpus
    assert not definition.load("local-cpu").has_gpus
    tpu = definition.load("local-tpu").section
    assert not tpu.has_gpus and tpu.device_resources == ("google.com/tpu",)
    assert [n.devices for n in tpu.nodes] == [{}, {"google.com/tpu": 4}, {"google.com/tpu": 4}]
    gpu = definition.load("local-gpu").section.nodes[1]
    assert gpu.gpus == 4 and gpu.devices == {"nvidia.com/gpu": 4, "google.com/tpu": 4}  # gpus: 4, the shorthand
    assert definition.section_class("existing") is None  # takes no definition keys
    source = inspect.getsource(definition)
    for provider_word in ('"local"', '"kindCluster"', '"nodes"', '"images"', '"network"', "provider =="):
        assert provider_word not in source, provider_word  # no provider's keys or names in the common loader


def write(tmp_path, doc: dict, name="mine"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def local_doc(**changes):
    doc = yaml.safe_load((CLUSTERS_DIR / "local-cpu.yaml").read_text())
    return {**doc, **changes}


@pytest.mark.parametrize("doc, key, problem", [
    (local_doc(images=[{"match": "x:*", "runtime": "rocket"}]), "images[0].runtime", "unknown runtime 'rocket'"),
    (local_doc(images=[{"match": "x:*", "runtime": "host", "user": "ray"}]), "images[0].user", "must be numeric"),
    (local_doc(nodes=[{"name": "a"}, {"capacity": {}}]), "nodes[1].name", "missing"),
    (local_doc(nodes=[{"name": "a", "gpus": "many"}]), "nodes[0].gpus", "must be a whole number, got 'many'"),
    (local_doc(nodes=[{"name": "a", "devices": {"google.com/tpu": "4x"}}]), "nodes[0].devices.google.com/tpu",
     "must be a whole number, got '4x'"),
    (local_doc(nodes=[{"name": "a", "devices": {"tpu": 4}}]), "nodes[0].devices.tpu",
     "'tpu' is not an extended resource name"),
    (local_doc(nodes=[{"name": "a", "gpus": 1, "devices": {"nvidia.com/gpu": 2}}]), "nodes[0].gpus",
     "given twice: gpus is short for devices.nvidia.com/gpu"),
    (local_doc(network={"podCIDR": "ten"}), "network.podCIDR", "not a CIDR"),
    (local_doc(nodes=[]), "nodes", "at least one node"),
    (local_doc(network={"podCidr": "10.1.0.0/16"}), "network.podCidr", "unknown key; allowed keys: hostAddress"),
    (local_doc(images=[{"match": "x:*", "runtime": "host", "workdir": "/"}]), "images[0].workdir", "unknown key"),
    (local_doc(controlPlane={"gates": {}}), "controlPlane.gates", "unknown key; allowed keys: featureGates"),
    (local_doc(controlPlane={"featureGates": {"GenericWorkload": "yes"}}), "controlPlane.featureGates.GenericWorkload",
     "must be true or false, got 'yes'"),
    (local_doc(controlPlane={"featureGates": {"generic-workload": True}}), "controlPlane.featureGates.generic-workload",
     "not a Kubernetes feature gate name"),
    (local_doc(controlPlane={"runtimeConfig": {"scheduling.k8s.io": True}}), "controlPlane.runtimeConfig.scheduling.k8s.io",
     "not an API group/version"),
    ({**yaml.safe_load((CLUSTERS_DIR / "kind-cpu.yaml").read_text()), "kindCluster": {"name": "Big Name"}},
     "kindCluster.config", "must be a kind Cluster config"),
])
def test_a_bad_section_names_the_file_and_key_in_one_line(tmp_path, doc, key, problem):
    """The provider's own checks, which say how to fix it; the schema checks what they let through (below)."""
    path = write(tmp_path, doc)
    with pytest.raises(DefinitionError) as e:
        definition.load(str(path))
    message = str(e.value)
    assert message.startswith(f"cluster definition {path}: {key}: ") and problem in message and "\n" not in message


def test_a_definition_is_checked_against_its_schema_in_one_line(tmp_path):
    kind = yaml.safe_load((CLUSTERS_DIR / "kind-cpu.yaml").read_text())
    path = write(tmp_path, {**kind, "kindCluster": {**kind["kindCluster"], "loadImages": [{"image": "x"}]}})
    with pytest.raises(DefinitionError) as e:
        definition.load(str(path))
    assert str(e.value).startswith(f"cluster definition {path}: kindCluster.loadImages.0: {{'image': 'x'}} is not of ")
    assert str(e.value).endswith("(its schema: clusters/definition.schema.json)") and "\n" not in str(e.value)


def test_the_control_plane_gates_reach_the_components_that_read_them():
    """local-was's feature gates go to the apiserver, controller-manager and scheduler; its runtime config to the
    apiserver alone; a definition without a controlPlane adds no flag."""
    from rayconformance.clusters.local.controlplane import switch_flags
    was = definition.load("local-was").section
    gates = "--feature-gates=GangScheduling=true,GenericWorkload=true"
    assert switch_flags(was, "kube-apiserver") == [gates, "--runtime-config=scheduling.k8s.io/v1alpha2=true"]
    assert switch_flags(was, "kube-controller-manager") == switch_flags(was, "kube-scheduler") == [gates]
    assert switch_flags(definition.load("local-cpu").section, "kube-apiserver") == []


def test_the_local_section_is_parsed_only_for_local_definitions(tmp_path):
    kind = yaml.safe_load((CLUSTERS_DIR / "kind-cpu.yaml").read_text())
    path = write(tmp_path, {**kind, "nodes": [{"name": "n1"}]})
    with pytest.raises(DefinitionError, match="unknown key 'nodes' for provider kind; allowed keys: apiVersion, "
                                              "kind, name, provider, kindCluster"):
        definition.load(str(path))
    with pytest.raises(DefinitionError, match="missing 'provider'"):
        definition.load(str(write(tmp_path, {k: v for k, v in local_doc().items() if k != "provider"})))
    from rayconformance.clusters.local import section
    with pytest.raises(DefinitionError, match="is for provider 'kind'; the local test bed takes"):
        section.load("kind-cpu")


def test_a_bad_cluster_option_is_one_usage_line(suite, tmp_path):
    path = write(suite.pytester.path, local_doc(images=[{"match": "x:*", "runtime": "rocket"}]), "bad")
    suite.tests()
    line = usage_error(suite.run(f"--cluster={path}"))
    assert f"cluster definition {path}: images[0].runtime: unknown runtime 'rocket'" in line


def test_environment_carries_the_resolved_definition_not_its_name(tmp_path):
    copy = tmp_path / "defs" / "mine-gpu.yaml"
    copy.parent.mkdir()
    shutil.copyfile(CLUSTERS_DIR / "local-gpu.yaml", copy)
    defn = definition.load(str(copy))
    cluster = providers.Cluster(provider="local", name="mine", kubeconfig=tmp_path / "kubeconfig", definition=defn)
    Environment(cluster=cluster).save(tmp_path)
    shutil.rmtree(copy.parent)  # nothing may read the file again
    back = Environment.load(tmp_path).cluster
    assert back.definition == defn
    handle = providers.attach(back, tmp_path)
    assert handle.gpu_nodes() == {n.name: n.gpus for n in defn.section.nodes if n.gpus}


COUNT_PARSES = '''
from pathlib import Path

from rayconformance.clusters.local.section import LocalSection

_parse = LocalSection.parse.__func__


def counted(cls, doc, name, path):
    with open(Path(__file__).parent / "parses", "a") as f:
        f.write(name + "\\n")
    return _parse(cls, doc, name, path)


LocalSection.parse = classmethod(counted)
'''

DEFINED_FAKE = '''
from fakeprovider import FakeProvider


class DefinedFake(FakeProvider):
    def __init__(self, name, definition, run_dir, keep=False, **kw):
        super().__init__(name, definition, run_dir, keep, **kw)
        self.definition = definition

    def up(self):
        cluster = super().up()
        cluster.definition = self.definition
        return cluster
'''

READS_THE_VALUE = '''
import pytest


@pytest.mark.feature("RayClusterProvisioning")
@pytest.mark.parametrize("i", range(4))
def test_definition_travels(cluster, provider, conformance_options, i):
    assert cluster.definition == conformance_options.definition
    assert cluster.definition.name == "local-gpu" and provider.gpu_nodes()
'''


def test_resolved_once_for_all_xdist_workers(suite):
    """The controller parses the definition; workers get the value (workerinput, environment.json)."""
    suite.pytester.makeconftest(COUNT_PARSES)
    suite.pytester.makepyfile(definedfake=DEFINED_FAKE)
    suite.tests(READS_THE_VALUE)
    result = suite.pytester.runpytest_subprocess("conformance", "--provider-factory=definedfake:DefinedFake",
                                                 "--run-id=unit", "-p", "no:cacheprovider", "-n", "2",
                                                 "--cluster=local-gpu", "--run-test=definition_travels")
    result.assert_outcomes(passed=4)
    assert (suite.pytester.path / "parses").read_text().split() == ["local-gpu"]


def test_the_schema_takes_what_the_parsers_take():
    """Values the sections turn into strings, or read as absent, fit the schema as they fit the parsers."""
    doc = local_doc(images=[{"match": "x:*", "runtime": "host", "user": 1000, "entrypoint": ["sleep", 3600],
                             "volumes": None, "workingDir": None}],
                    nodes=[{"name": "a", "capacity": {"cpu": 0.5}, "gpus": None}])
    assert definition.schema_problem(doc) is None
