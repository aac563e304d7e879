"""RayCluster fields that act differently in a RayService's rayClusterConfig than on a user's RayCluster, and the
ray.io annotations read on the RayService itself: suspend (put on the RayCluster at its creation only),
upgradeStrategy (refused: the RayService upgrades its clusters itself), authOptions.enableK8sTokenAuth and the
GCS fault-tolerance annotations (checked against the RayService's cluster config), and authOptions.secretName (the
token a RayService's clusters share)."""
from __future__ import annotations

import copy
import uuid

import pytest

from rayconformance.testing.expect import service_fields
from rayconformance.testing.expect.conditions import condition, has_condition
from rayconformance.testing.expect.rayservice import active_and_pending_clusters, describe_rayservice
from rayconformance.testing.expect.rayservice_history import no_raycluster_must_be_created

from .helpers import greeter

NO_CHANGE_WINDOW_S = 20  # how long a change that must do nothing is watched (the operator reacts within seconds)


def greeter_with(ctx, **config) -> tuple[list[dict], dict]:
    """The greeter's documents with `config` set in its rayClusterConfig; the documents and the RayService's body."""
    docs = greeter(ctx)
    body = next(d for d in docs if d["kind"] == "RayService")
    body["spec"]["rayClusterConfig"].update(config)
    return docs, body


@pytest.mark.feature("RayServiceClusterSuspendAtCreation")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.covers("RayService:spec.rayClusterConfig.suspend")
def test_cluster_suspend_is_set_only_at_creation(ctx):
    """A RayService created with rayClusterConfig.suspend gets its RayCluster suspended (RayClusterSuspended, no
    Pod) and waits, not Ready, for whoever admits the cluster (Kueue) to resume it; resumed on the RayCluster
    itself, the cluster serves and the RayService becomes Ready on it. Afterwards the cluster's suspend is no longer
    the RayService's: changing rayClusterConfig.suspend (to false, then back to true) neither makes a new RayCluster
    nor changes or suspends the running one, and the RayService keeps answering from it."""
    docs, _ = greeter_with(ctx, suspend=True)
    ctx.create(docs)
    service = ctx.rayservice("greeter")

    # step 1: its RayCluster is created suspended, and the RayService waits for it
    cluster = ctx.raycluster(service.must_have_pending_cluster())
    cluster.must_be_suspended()
    obj = service.get()
    assert not has_condition(obj, "Ready", "True"), \
        f"a RayService whose only RayCluster is suspended must not be Ready; observed {describe_rayservice(obj)}"

    # step 2: admitted (resumed on the RayCluster itself), the cluster serves and the RayService becomes Ready
    cluster.patch({"spec": {"suspend": False}})
    cluster.must_be_resumed()
    obj = service.must_be_ready()
    assert active_and_pending_clusters(obj)[0] == cluster.name, \
        f"the RayService must serve from its resumed RayCluster {cluster.name}; observed {describe_rayservice(obj)}"
    service.serve_service_must_answer(body=f"v1 from {cluster.name}")
    generation = cluster.get()["metadata"]["generation"]

    # step 3: rayClusterConfig.suspend changed on the running RayService: false, then true again; nothing follows
    for value in (False, True):
        what = f"rayClusterConfig.suspend changed to {str(value).lower()} once the RayCluster exists"
        with service.watch() as watch, ctx.watch("RayCluster") as clusters:
            changed_at = watch.clock()
            patched = service.patch({"spec": {"rayClusterConfig": {"suspend": value}}})
            service.must_keep_cluster(watch, cluster.name, patched["metadata"]["generation"], changed_at,
                                      NO_CHANGE_WINDOW_S, what=what)
            no_raycluster_must_be_created(clusters, through=what)
        kept = cluster.must_keep_spec(generation, through=what)
        assert not kept["spec"].get("suspend"), \
            f"{what}: RayCluster {cluster.name} must stay resumed; observed spec.suspend={kept['spec'].get('suspend')}"
        service.serve_service_must_answer(body=f"v1 from {cluster.name}")


@pytest.mark.feature("RayServiceClusterUpgradeStrategyRefused")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.covers("RayService:spec.rayClusterConfig.upgradeStrategy.type")
def test_cluster_upgrade_strategy_is_refused_for_a_rayservice(ctx):
    """A RayService whose rayClusterConfig sets upgradeStrategy (Recreate: a RayCluster's own way of taking a new
    spec, while a RayService upgrades by new RayClusters) gets its RayCluster refused: a Warning event
    InvalidRayClusterSpec naming upgradeStrategy, no Pod, and the RayService not Ready."""
    docs, _ = greeter_with(ctx, upgradeStrategy={"type": "Recreate"})
    ctx.create(docs)
    service = ctx.rayservice("greeter")

    cluster = ctx.raycluster(service.must_have_pending_cluster())
    cluster.must_be_reported_invalid("upgradeStrategy", about="upgradeStrategy set on a RayService's RayCluster")
    obj = service.get()
    assert not has_condition(obj, "Ready", "True"), \
        f"a RayService whose RayCluster is refused must not be Ready; observed {describe_rayservice(obj)}"


REDIS = {"redisAddress": "redis:6379"}
# (case id, annotations on the RayService, rayClusterConfig fields, what the Ready message must name, the field)
REFUSED = [
    ("k8s-token-auth", {}, {"authOptions": {"enableK8sTokenAuth": True}}, "K8s token auth",
     "RayService:spec.rayClusterConfig.authOptions.enableK8sTokenAuth"),
    ("ft-annotation-with-ft-options", {"ray.io/ft-enabled": "true"}, {"gcsFaultToleranceOptions": REDIS},
     "ray.io/ft-enabled", "RayService:metadata.annotations[ray.io/ft-enabled]"),
    ("storage-namespace-annotation-with-ft-options", {"ray.io/external-storage-namespace": "greeter-ns"},
     {"gcsFaultToleranceOptions": REDIS}, "ray.io/external-storage-namespace",
     "RayService:metadata.annotations[ray.io/external-storage-namespace]"),
]


@pytest.mark.feature("RayServiceValidation")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.parametrize("case, annotations, config, named", [
    pytest.param(*c[:4], id=c[0], marks=pytest.mark.covers(c[4])) for c in REFUSED])
def test_cluster_config_refused_for_a_rayservice(ctx, case, annotations, config, named):
    """A RayService is refused (Ready=False/ValidationFailed naming what is wrong, a Warning event
    InvalidRayServiceSpec, nothing created) when its rayClusterConfig asks for what a RayService cannot have:
    Kubernetes token authentication (authOptions.enableK8sTokenAuth, for a user's RayCluster only), or GCS fault
    tolerance both through gcsFaultToleranceOptions and through the RayService's own deprecated annotations
    (ray.io/ft-enabled, ray.io/external-storage-namespace), which the operator reads on the RayService."""
    docs, body = greeter_with(ctx, **config)
    body["metadata"].setdefault("annotations", {}).update(annotations)
    refusal_must_be_reported(ctx.create_rayservice(body), case, named)


def refusal_must_be_reported(service, case: str, named: str) -> None:
    """The RayService reports Ready=False/ValidationFailed with a message naming `named`, a Warning event
    InvalidRayServiceSpec, and nothing was created for it."""
    __tracebackhide__ = True
    # step 1: the status says the spec is invalid, and why
    obj = service.must_report_condition("Ready", "False", "ValidationFailed")
    message = (condition(obj, "Ready") or {}).get("message") or ""
    assert named in message, f"expected the Ready message to name {named!r} ({case}), observed {message!r}"

    # step 2: so does a Warning event; nothing was created for it
    service.events_must_include([("Warning", "InvalidRayServiceSpec", None)])
    service.must_have_created_nothing(what=f"a RayService refused for {case}")


LABELS = "RayClusterGroupLabelsAndResources"  # KubeRay 1.5+ refuses labels and a Redis user in rayStartParams
# (group, rayStartParams key, value, what the Ready message must name)
START_PARAMS = [
    pytest.param("headGroupSpec", "labels", "conformance-tier=head", "rayStartParams['labels']",
                 id="head-labels-in-start-params", marks=pytest.mark.covers(
                     "RayService:spec.rayClusterConfig.headGroupSpec.rayStartParams[labels]")),
    pytest.param("workerGroupSpecs", "labels", "conformance-tier=worker", "rayStartParams['labels']",
                 id="worker-labels-in-start-params", marks=pytest.mark.covers(
                     "RayService:spec.rayClusterConfig.workerGroupSpecs[].rayStartParams[labels]")),
    pytest.param("headGroupSpec", "redis-username", "conformance", "redis username in rayStartParams",
                 id="head-redis-username", marks=pytest.mark.covers(
                     "RayService:spec.rayClusterConfig.headGroupSpec.rayStartParams[redis-username]")),
]


@pytest.mark.feature("RayServiceValidation", LABELS)
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.parametrize("group,key,value,named", START_PARAMS)
def test_start_params_refused_for_a_rayservice(ctx, group, key, value, named):
    """A RayService is refused (Ready=False/ValidationFailed naming what is wrong, a Warning event
    InvalidRayServiceSpec, nothing created) when its rayClusterConfig gives what no RayCluster may have: node labels
    in a group's rayStartParams instead of its labels field, or a Redis user name in the head's (it belongs to
    gcsFaultToleranceOptions). The RayService's validation applies the RayCluster checks to rayClusterConfig."""
    docs, body = greeter_with(ctx)
    config = body["spec"]["rayClusterConfig"]
    if group == "workerGroupSpecs":  # the greeter is head-only: a worker group like its head
        template = copy.deepcopy(config["headGroupSpec"]["template"])
        template["spec"]["containers"][0]["name"] = "ray-worker"
        config[group] = [{"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                          "rayStartParams": {}, "template": template}]
    spec = config[group] if group == "headGroupSpec" else config[group][0]
    spec.setdefault("rayStartParams", {})[key] = value
    refusal_must_be_reported(ctx.create_rayservice(body), f"rayStartParams {key} in {group}", named)



@pytest.mark.feature("RayServiceTokenAuthSecret")
@pytest.mark.samples("rayservice-greeter", "rayservice-token-auth")
@pytest.mark.covers("RayService:spec.rayClusterConfig.authOptions.secretName")
def test_rayservice_serves_with_the_token_of_its_secret(ctx):
    """A RayService with token authentication whose rayClusterConfig names a Secret of the user's
    (authOptions.secretName) runs its RayCluster on that Secret's token: the operator deploys the Serve application
    with it (the RayService becomes Ready and answers), Ray's dashboard refuses requests without a token or with
    another one and answers those with the user's, and the operator makes no token Secret of its own."""
    token = uuid.uuid4().hex
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "greeter-token"},
              "stringData": {"auth_token": token}}
    app = [d for d in ctx.samples("rayservice-greeter") if d["kind"] == "ConfigMap"]
    body = ctx.sample("rayservice-token-auth")
    body["spec"]["rayClusterConfig"]["authOptions"]["secretName"] = "greeter-token"
    ctx.create([secret, *app, body])
    service = ctx.rayservice(body["metadata"]["name"])

    # step 1: Ready and answering: the operator deployed the application with the user's token
    active, _ = active_and_pending_clusters(service.must_be_ready())
    service.serve_service_must_answer(body=f"v1 from {active}")

    # step 2: Ray's dashboard takes the user's token and no other
    cluster = ctx.raycluster(active)
    cluster.dashboard_must_refuse(what="a request without the token")
    cluster.dashboard_must_refuse(token=f"not-{token}", what="a request with another token")
    service_fields.dashboard_must_accept_token(ctx.k8s, ctx.namespace, cluster.head_service_name(), token,
                                               ctx.timeouts.state, whose="Secret greeter-token")

    # step 3: the operator made no token Secret of its own for the cluster
    service_fields.secret_must_not_exist(ctx.k8s, ctx.namespace, active,
                                         why="authOptions.secretName names the Secret holding the token")
