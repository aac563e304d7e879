"""bench/upstream_samples.py, its parts (bench/upstream/) and what it shares with the conformance tests of KubeRay's
samples (testing/kuberay_samples.py): which samples run or are skipped, the setup their comments ask for, when a
sample has reached its goal or never can, and its teardown."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def samples():
    """The command; loading it puts bench/ on sys.path for its parts, `upstream.plan` and `upstream.goals`."""
    spec = importlib.util.spec_from_file_location("upstream_samples", ROOT / "bench" / "upstream_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plan():
    """Where the samples are and which of them run (shared with the conformance tests)."""
    return importlib.import_module("rayconformance.testing.kuberay_samples")


@pytest.fixture(scope="module")
def goals(samples):
    return importlib.import_module("upstream.goals")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sample.yaml"
    path.write_text(text)
    return path


RAYCLUSTER = """apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: c}
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
%s
"""


def test_a_plain_raycluster_runs(plan, tmp_path):
    skip, objs = plan.classify(write(tmp_path, RAYCLUSTER % ""))
    assert skip is None and objs[0]["kind"] == "RayCluster"


@pytest.mark.parametrize("extra, reason", [
    ("          resources: {limits: {nvidia.com/gpu: 1}}", "needs hardware"),
    ("          args: ['pip install torch']", "needs internet egress"),
])
def test_hardware_and_egress_are_skipped_with_the_reason(plan, tmp_path, extra, reason):
    skip, _ = plan.classify(write(tmp_path, RAYCLUSTER % extra))
    assert skip and skip.startswith(reason)


def test_a_link_in_a_comment_is_no_egress(plan, tmp_path):
    skip, _ = plan.classify(write(tmp_path, "# see https://example.invalid/x.zip\n" + RAYCLUSTER % ""))
    assert skip is None


def test_a_file_without_ray_resources_is_skipped(plan, tmp_path):
    skip, _ = plan.classify(write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
    assert skip == "no Ray resource (ConfigMap)"


def test_the_secret_a_comment_tells_the_user_to_create_is_read(plan):
    text = ("  # kubectl create secret generic my-auth --from-literal=auth_token='s3cret' -n default\n"
            "  # kubectl create secret generic other --from-literal=a=1 --from-literal=b=\"2\"\n"
            "  secretKeyRef: {name: my-auth}\n")
    assert plan.documented_secrets(text) == {"my-auth": {"auth_token": "s3cret"}, "other": {"a": "1", "b": "2"}}


def test_no_comment_no_secret(plan):
    assert plan.documented_secrets("kubectl create secret generic x --from-literal=a=b\n") == {}


def test_a_kind_the_cluster_does_not_serve_is_named(plan):
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    class Resources:
        def get(self, api_version, kind):
            if kind == "Queue":
                raise ResourceNotFoundError("no match")
            return object()

    class Dyn:
        resources = Resources()

    objs = [{"apiVersion": "ray.io/v1", "kind": "RayCluster"}, {"apiVersion": "scheduling.example/v2", "kind": "Queue"}]
    assert plan.unserved(Dyn(), objs) == "Queue (scheduling.example/v2)"
    assert plan.unserved(Dyn(), objs[:1]) is None


@pytest.mark.parametrize("job_status, cluster_state, goal", [
    ({"jobDeploymentStatus": "Waiting", "rayClusterName": "c", "rayClusterStatus": {}}, "ready", True),
    ({"jobDeploymentStatus": "Waiting", "rayClusterName": "c"}, None, False),
    ({"jobDeploymentStatus": "Initializing", "rayClusterName": "c"}, "ready", False),
])
def test_an_interactive_rayjob_reaches_its_goal_waiting_for_the_users_job(goals, monkeypatch, job_status,
                                                                         cluster_state, goal):
    statuses = {("RayJob", "j"): job_status, ("RayCluster", "c"): {"state": cluster_state}}
    monkeypatch.setattr(goals, "_status", lambda api, ns, obj: statuses[obj["kind"], obj["metadata"]["name"]])
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
           "spec": {"submissionMode": "InteractiveMode"}}
    assert goals.reached(None, "ns", job)[0] is goal


def test_a_pod_counts_its_limits_when_it_sets_no_requests(goals):
    from kubernetes import client

    def ctr(limits=None, requests=None):
        return client.V1Container(name="c", resources=client.V1ResourceRequirements(limits=limits, requests=requests))

    pod = client.V1Pod(spec=client.V1PodSpec(
        containers=[ctr(limits={"cpu": "4", "memory": "1Gi"}), ctr(limits={"cpu": "1"}, requests={"cpu": "500m"})],
        init_containers=[ctr(limits={"cpu": "200m"})]))
    assert goals.pod_requests(pod) == {"cpu": 4.5, "memory": float(2**30)}


class FakeCore:
    """Nodes and Pods as the scheduler-facing API shows them."""

    def __init__(self, nodes, pods, sample_namespaces):
        from kubernetes import client
        self.c = client
        self.nodes = [client.V1Node(metadata=client.V1ObjectMeta(name=n), spec=client.V1NodeSpec(taints=taints),
                                    status=client.V1NodeStatus(allocatable={"cpu": cpu, "memory": "8Gi"}))
                      for n, cpu, taints in nodes]
        self.pods = [client.V1Pod(metadata=client.V1ObjectMeta(name=name, namespace=ns),
                                  spec=client.V1PodSpec(node_name=node, containers=[client.V1Container(
                                      name="c", resources=client.V1ResourceRequirements(requests={"cpu": cpu}))]),
                                  status=client.V1PodStatus(phase="Running" if node else "Pending"))
                     for name, ns, node, cpu in pods]
        self.sample_namespaces = sample_namespaces

    def list_node(self):
        return self.c.V1NodeList(items=self.nodes)

    def list_pod_for_all_namespaces(self):
        return self.c.V1PodList(items=self.pods)

    def list_namespace(self, label_selector):
        return self.c.V1NamespaceList(items=[self.c.V1Namespace(metadata=self.c.V1ObjectMeta(name=n))
                                             for n in self.sample_namespaces])


def test_a_pod_larger_than_any_node_never_fits(goals):
    from kubernetes import client
    taint = [client.V1Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")]
    core = FakeCore([("cp", "2", taint), ("w", "2", None)], [("head", "s", None, "4")], ["s"])
    assert "asks for cpu 4; the largest schedulable node has 2" in goals._never_fits(core, "s")


def test_a_sample_larger_than_what_the_cluster_leaves_never_fits(goals):
    core = FakeCore([("w", "2", None)], [("dns", "kube-system", "w", "500m"), ("head", "s", "w", "1"),
                                         ("worker", "s", None, "1")], ["s"])
    assert "ask for cpu 2 together; the schedulable nodes have 1.5" in goals._never_fits(core, "s")


def test_a_pod_no_node_has_room_for_beside_the_samples_own_never_fits(goals):
    core = FakeCore([("cp", "2", None), ("w", "2", None)],
                    [("dns", "kube-system", "cp", "500m"), ("head", "s", "w", "1"), ("w1", "s", "cp", "1"),
                     ("w2", "s", None, "1.2")], ["s"])
    assert goals._never_fits(core, "s") == ("Pod w2 asks for cpu 1.2; no schedulable node has that left beside "
                                            "the cluster's own Pods and the sample's others (the most: 1)")


def test_a_pod_that_waits_for_another_sample_to_finish_may_still_fit(goals):
    core = FakeCore([("w", "2", None)], [("other", "t", "w", "1"), ("head", "s", None, "1")], ["s", "t"])
    assert goals._never_fits(core, "s") is None


@pytest.fixture(scope="module")
def side():
    spec = importlib.util.spec_from_file_location("side", ROOT / "bench" / "samples_side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_side_by_side_reads_logs_the_later_winning(side, tmp_path):
    first = tmp_path / "a.log"
    first.write_text("  skip x.yaml: needs hardware: nvidia.com/gpu\n  FAILED  y.yaml (300s)\n"
                     "      not reached in 300s: RayJob j: jobDeploymentStatus=Waiting\n      Pod p Pending\n"
                     "  REACHED z.yaml (20s)\n")
    rerun = tmp_path / "b.log"
    rerun.write_text("  REACHED y.yaml (30s)\n")
    assert side.read([str(first)])["y.yaml"] == ("failed", "not reached in 300s: RayJob j: jobDeploymentStatus=Waiting"
                                                           " | Pod p Pending")
    assert side.read([str(first), str(rerun)]) == {"x.yaml": ("skipped", "needs hardware: nvidia.com/gpu"),
                                                   "y.yaml": ("reached", ""), "z.yaml": ("reached", "")}


def test_side_by_side_tells_node_size_from_other_differences(side):
    a = {"s1": ("reached", ""), "s2": ("reached", ""), "s3": ("failed", "x"), "s4": ("reached", ""),
         "gpu": ("skipped", "needs hardware")}
    small = "Pod p asks for cpu 4; the largest schedulable node has 2 allocatable"
    b = {"s1": ("reached", ""), "s2": ("failed", small),
         "s3": ("reached", ""), "s4": ("failed", "not reached in 300s"), "gpu": ("skipped", "needs hardware")}
    assert side.agreement("local", a, "kind", b) == ("both attempted 4: same outcome 1; reached on local only 2 "
                                                     "(1 of them for node size); reached on kind only 1 "
                                                     "(0 of them for node size)")


class FakeCustom:
    """Ray resources in one namespace; those named in `held` keep a finalizer until it is patched away."""

    def __init__(self, names, held):
        from kubernetes import client
        self.c = client
        self.objs = {n: {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                         "metadata": {"name": n, "finalizers": ["f"] if n in held else []}} for n in names}
        self.calls = []

    def _find(self, name):
        if name not in self.objs:
            raise self.c.ApiException(status=404, reason="Not Found")
        return self.objs[name]

    def get_namespaced_custom_object(self, group, version, ns, plural, name):
        self.calls.append(("get", name))
        return self._find(name)

    def delete_namespaced_custom_object(self, group, version, ns, plural, name):
        self.calls.append(("delete", name))
        if not self._find(name)["metadata"]["finalizers"]:
            del self.objs[name]

    def patch_namespaced_custom_object(self, group, version, ns, plural, name, body):
        self.calls.append(("patch", name, body))
        self.objs.pop(name)


def test_teardown_deletes_ray_resources_before_the_namespace_and_names_finalizers_it_removes(
        samples, monkeypatch, capsys):
    custom = FakeCustom(["free", "held"], held={"held"})
    deleted_namespaces = []
    monkeypatch.setattr(samples.client, "CustomObjectsApi", lambda api: custom)
    monkeypatch.setattr(samples.client, "CoreV1Api", lambda api: None)
    monkeypatch.setattr(samples.namespaces, "delete",
                        lambda core, ns, timeout: deleted_namespaces.append((ns, dict(custom.objs))))
    monkeypatch.setattr(samples, "RAY_GONE_SECONDS", 0.0)

    class NoClusterScoped:
        class resources:
            @staticmethod
            def get(api_version, kind):
                raise LookupError(kind)

    objs = [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": n}} for n in ("free", "held")]
    samples.teardown(None, NoClusterScoped, "s", objs)
    assert [c[:2] for c in custom.calls if c[0] != "get"] == [("delete", "free"), ("delete", "held"),
                                                                 ("patch", "held")]
    assert custom.calls[-1][2] == {"metadata": {"finalizers": None}}
    assert deleted_namespaces == [("s", {})], "the namespace goes last, after every Ray resource"
    assert "RayCluster s/held still held ['f']" in capsys.readouterr().out


class FakeEvents:
    def __init__(self, reasons):
        from kubernetes import client
        self.c, self.reasons, self.selectors = client, reasons, []

    def list_namespaced_event(self, ns, field_selector):
        self.selectors.append(field_selector)
        fields = dict(f.split("=", 1) for f in field_selector.split(","))
        items = [self.c.CoreV1Event(involved_object=self.c.V1ObjectReference(name=name), reason=reason,
                                    metadata=self.c.V1ObjectMeta(name="e"))
                 for name, reason in self.reasons
                 if name == fields["involvedObject.name"] and reason == fields["reason"]]
        return self.c.CoreV1EventList(items=items)


def selecting_job(cluster):
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
            "spec": {"clusterSelector": {"ray.io/cluster": cluster}}}


def test_a_rayjob_selecting_a_cluster_the_sample_never_makes_ends_once_the_operator_says_so(goals):
    job = selecting_job("elsewhere")
    assert goals._selects_a_cluster_never_made(FakeEvents([]), "s", [job]) is None, "not before the operator says"
    why = goals._selects_a_cluster_never_made(FakeEvents([("j", "RayClusterNotFound")]), "s", [job])
    assert why == ("RayJob j selects RayCluster elsewhere, which the sample does not create "
                   "(the operator: RayClusterNotFound)")


def test_a_rayjob_selecting_the_samples_own_cluster_waits_for_it(goals):
    own = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "mine"}}
    events = FakeEvents([("j", "RayClusterNotFound")])
    assert goals._selects_a_cluster_never_made(events, "s", [own, selecting_job("mine")]) is None
    assert events.selectors == []


def test_a_profile_built_from_source_reads_the_samples_of_its_tree(plan, tmp_path):
    samples = tmp_path / "ray-operator" / "config" / "samples"
    samples.mkdir(parents=True)
    (tmp_path / "ray-operator" / "go.mod").write_text("module github.com/ray-project/kuberay/ray-operator\n")
    assert plan.samples_dir("v1.7.0", tmp_path) == samples


def test_a_release_without_its_samples_says_how_to_get_them(plan, monkeypatch, tmp_path):
    monkeypatch.setattr(plan, "CACHE", tmp_path)
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "gomod"))
    with pytest.raises(plan.SamplesNotFound, match=r"build-tools.sh kuberay@v0.0.0"):
        plan.samples_dir("v0.0.0")


class Options:
    def __init__(self, version, tree=None):
        self.profile = type("Profile", (), {"implementation": {"version": version}})()
        self.operator_tree = tree


def test_a_test_skips_a_sample_whose_release_copy_needs_egress_and_fails_on_a_missing_one(plan, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setattr(plan, "samples_dir", lambda version, tree=None: tmp_path)
    (tmp_path / "ray-job.sample.yaml").write_text(RAYCLUSTER % "          args: ['pip install torch']")
    with pytest.raises(pytest.skip.Exception, match=r"KubeRay v1.6.1's ray-job.sample.yaml: needs internet egress"):
        plan.for_test(Options("v1.6.1"), "ray-job.sample.yaml")
    with pytest.raises(pytest.fail.Exception, match=r"KubeRay v1.6.1 ships no sample ray-cluster.tls.yaml"):
        plan.for_test(Options("v1.6.1"), "ray-cluster.tls.yaml")
    (tmp_path / "ray-cluster.sample.yaml").write_text(RAYCLUSTER % "")
    path, objs = plan.for_test(Options("v1.6.1"), "ray-cluster.sample.yaml")
    assert path == tmp_path / "ray-cluster.sample.yaml" and objs[0]["kind"] == "RayCluster"
