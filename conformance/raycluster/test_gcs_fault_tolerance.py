"""GCS fault tolerance with an external Redis, or with an embedded store on a volume the operator provisions (no
Redis): Ray state survives the loss of the head Pod; cleanup on delete."""
from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from rayconformance.testing import ray
from rayconformance.testing.expect.raycluster_pods import head_restarts
from rayconformance.testing.expect.workloads import describe_pods
from rayconformance.testing.handles.redis import Access
from rayconformance.testing.programs import program
from rayconformance.testing.watch import WatchLog

from .gcs_ft import create_counter, detached_actor_must_keep_its_state

FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"
STORAGE_NS = "ray.io/external-storage-namespace"


def job_complete(job: dict) -> bool:
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def deletion_step(kind: str, obj: dict) -> str:
    """What a watch event of the deletion shows, in short."""
    meta = obj["metadata"]
    if kind == "Job":
        return f"{meta['name']} {'Complete' if job_complete(obj) else 'running'}"
    return f"{meta['name']} finalizers={meta.get('finalizers') or []}" + (" deleting" if meta.get("deletionTimestamp") else "")


@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-gcs-ft")
def test_detached_actor_survives_head_pod_deletion(ctx, redis):
    """With GCS fault tolerance backed by Redis, deleting the head Pod brings a new head that reuses the same
    Redis storage namespace, the worker survives, and a detached actor keeps its state across the failure."""
    cluster = ctx.create_raycluster("raycluster-gcs-ft")
    cluster.must_be_provisioned()
    old_head = cluster.head_pod()
    old_storage_ns = old_head.metadata.annotations.get("ray.io/external-storage-namespace")

    create_counter(cluster)

    ctx.core.delete_namespaced_pod(old_head.metadata.name, ctx.namespace)
    new_head = cluster.new_head_must_be_ready(old_head.metadata.uid, ctx.timeouts.long)
    assert new_head.metadata.annotations.get("ray.io/external-storage-namespace") == old_storage_ns, \
        (f"the new head must reuse the Redis storage namespace {old_storage_ns!r}; observed "
         f"{new_head.metadata.annotations.get('ray.io/external-storage-namespace')!r}")
    workers = cluster.pods("worker")
    assert len(workers) == 1, f"the worker should have survived the head failure: {describe_pods(workers)}"

    detached_actor_must_keep_its_state(cluster, "head failure")


@pytest.mark.feature("RayClusterGCSEmbeddedStorage")
@pytest.mark.samples("raycluster-gcs-embedded")
def test_embedded_store_keeps_detached_actor_across_head_loss(ctx):
    """With GCS fault tolerance on an embedded store (gcsFaultToleranceOptions.backend rocksdb) and no Redis at all,
    the operator provisions a PersistentVolumeClaim owned by the RayCluster, Bound and mounted by the head Pod, that
    asks for the storage size the spec gives and, with accessModes left unset, ReadWriteOnce (the documented
    default); when the head Pod is deleted, the new head mounts the same claim, the worker Pod stays, and a
    detached actor keeps its state; deleting the RayCluster deletes the claim with it."""
    body = ctx.sample("raycluster-gcs-embedded")
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    # step 1: the store's claim, Bound and mounted by the head, of the size asked and the default access mode
    claim = cluster.head_storage_must_be_bound(ctx.timeouts.short, what="the embedded GCS store")
    shaped = {"storage": claim.spec.resources.requests.get("storage"), "accessModes": claim.spec.access_modes}
    asked = {"storage": body["spec"]["gcsFaultToleranceOptions"]["storage"]["size"], "accessModes": ["ReadWriteOnce"]}
    assert shaped == asked, \
        (f"the embedded GCS store's claim {claim.metadata.name} must ask for the spec's size and, with accessModes "
         f"unset, ReadWriteOnce: {asked}; observed {shaped}")
    old_head = cluster.head_pod()
    workers = sorted(cluster.worker_pods_now())

    # step 2: a detached actor with state
    create_counter(cluster)

    # step 3: the head Pod goes; a new head comes up on the same claim
    ctx.core.delete_namespaced_pod(old_head.metadata.name, ctx.namespace)
    cluster.new_head_must_be_ready(old_head.metadata.uid, ctx.timeouts.long)
    again = cluster.head_storage_must_be_bound(ctx.timeouts.short, what="the embedded GCS store after the head's loss")
    assert again.metadata.uid == claim.metadata.uid, \
        (f"the new head must mount the same claim as the old one ({claim.metadata.name}, uid {claim.metadata.uid}); "
         f"observed {again.metadata.name}, uid {again.metadata.uid}")

    # step 4: the worker stayed, and the detached actor kept its state (read back from the store, no Redis)
    assert sorted(cluster.worker_pods_now()) == workers, \
        f"the worker Pod should have stayed through the head's loss: {describe_pods(cluster.pods('worker'))}"
    detached_actor_must_keep_its_state(cluster, "head Pod's deletion")

    # step 5: the claim goes with the RayCluster
    cluster.delete()
    cluster.head_storage_must_be_gone(claim.metadata.name, after="the RayCluster's deletion")




@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-gcs-ft")
def test_gcs_crash_inside_head_keeps_detached_actor(ctx, redis):
    """With GCS fault tolerance, when the GCS process inside the head crashes, the head's Ray container restarts
    in the same Pod (the operator does not replace the Pod), the worker stays, and a detached actor keeps its
    state: its GCS comes back from Redis."""
    cluster = ctx.create_raycluster("raycluster-gcs-ft")
    cluster.must_be_provisioned()
    head = cluster.head_pod()
    worker_uids = sorted(p.metadata.uid for p in cluster.pods("worker"))

    # step 1: a detached actor with state
    create_counter(cluster)

    # step 2: the GCS process dies inside the head; its container restarts in the same Pod
    code, answer = cluster.submit_ray_job(program("kill_gcs"), f"rc-kill-gcs-{uuid.uuid4().hex[:6]}")
    assert code == 200, f"the Jobs API refused the job that stops the GCS: HTTP {code} {answer[:300]}"
    cluster.head_must_restart_in_place(head.metadata.uid, head_restarts(head), ctx.timeouts.long)

    # step 3: the worker stayed, and the detached actor kept its state
    workers = sorted(p.metadata.uid for p in cluster.pods("worker"))
    assert workers == worker_uids, f"the worker Pods must stay through a GCS restart: before {worker_uids}, after {workers}"
    detached_actor_must_keep_its_state(cluster, "GCS crash")


@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-gcs-ft")
def test_delete_cleans_redis_and_removes_cluster(ctx, redis):
    """Deleting a RayCluster with GCS fault tolerance keeps it, held by the operator's Redis cleanup finalizer,
    until the operator's Redis cleanup Job has completed; only then is the RayCluster removed, and its data is
    gone from Redis."""
    cluster = ctx.create_raycluster("raycluster-gcs-ft")
    cluster.must_be_provisioned()
    assert redis.dbsize() > 0, "the RayCluster's GCS wrote nothing to Redis"

    log = WatchLog().add("RayCluster", client.CustomObjectsApi(ctx.k8s).list_namespaced_custom_object, ray.GROUP,
                         ray.VERSION, ctx.namespace, "rayclusters", field_selector=f"metadata.name={cluster.name}"
                         ).add("Job", ctx.batch.list_namespaced_job, ctx.namespace,
                               label_selector=f"ray.io/cluster={cluster.name}")
    with log:
        cluster.delete()
        cluster.must_be_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    assert not log.errors, f"could not watch the deletion: {log.errors}"
    timeline = log.timeline(deletion_step)
    deleting = log.first("RayCluster", lambda typ, o: bool(o["metadata"].get("deletionTimestamp")))
    assert deleting and FINALIZER in (deleting.obj["metadata"].get("finalizers") or []), \
        f"the RayCluster being deleted must carry the finalizer {FINALIZER}; observed: {timeline}"
    cleaned = log.first("Job", lambda typ, o: job_complete(o))
    gone = log.first("RayCluster", lambda typ, o: typ == "DELETED")
    assert cleaned and gone and cleaned.at <= gone.at, \
        (f"the RayCluster must stay until its Redis cleanup Job has completed, and only then go; observed "
         f"{'no completed cleanup Job' if not cleaned else 'the RayCluster gone first'}: {timeline}")
    size = redis.dbsize()
    assert size == 0, f"deleting the RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"


@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-gcs-ft")
def test_invalid_configuration_gets_warning_event(ctx, redis):
    """A RayCluster whose GCS fault tolerance is misconfigured (a Redis password in rayStartParams) gets a
    Warning event naming the offending field, and no Pods."""
    body = ctx.sample("raycluster-gcs-ft")
    body["metadata"]["name"] = "gcsft-invalid"
    # the password must come from gcsFaultToleranceOptions, not from rayStartParams
    body["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"] = "literal"
    cluster = ctx.create_raycluster(body)

    cluster.must_be_reported_invalid("redis-password",
                                     about="the invalid GCS fault tolerance spec of RayCluster gcsft-invalid")


@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.samples("raycluster-gcs-ft")
def test_redis_address_without_fault_tolerance_options_is_invalid(ctx):
    """A RayCluster whose head sets RAY_REDIS_ADDRESS (which would turn on GCS fault tolerance implicitly) without
    gcsFaultToleranceOptions gets a Warning event with reason InvalidRayClusterSpec naming RAY_REDIS_ADDRESS, and
    no Pods."""
    body = ctx.sample("raycluster-gcs-ft")
    body["metadata"]["name"] = "redis-implicit"
    del body["spec"]["gcsFaultToleranceOptions"]
    body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]
    cluster = ctx.create_raycluster(body)

    cluster.must_be_reported_invalid("RAY_REDIS_ADDRESS", about="RAY_REDIS_ADDRESS without gcsFaultToleranceOptions")


LEGACY_STORE = "conformance-legacy-store"
LEGACY_FORMS = [  # (how the Redis is reached, where the head's password comes from)
    pytest.param(Access(password="none"), None, id="no-password"),
    pytest.param(Access(), "start-params", id="password-in-start-params"),
    pytest.param(Access(), "env", id="password-from-env"),
    pytest.param(Access(storage_namespace=LEGACY_STORE), "env", id="storage-namespace-annotation"),
]


def legacy_cluster(ctx, redis, password_from: str | None) -> dict:
    """samples/raycluster-gcs-ft-annotation.yaml with the head's Redis password given `password_from`: None (no
    password), "start-params" (its value in rayStartParams redis-password) or "env" ($REDIS_PASSWORD, the env
    variable from the Secret, as the sample has it); and the ray.io/external-storage-namespace annotation where the
    access names a storage namespace."""
    body = ctx.sample("raycluster-gcs-ft-annotation")
    head = body["spec"]["headGroupSpec"]
    container = head["template"]["spec"]["containers"][0]
    if password_from != "env":
        container["env"] = [e for e in container["env"] if e["name"] != "REDIS_PASSWORD"]
        head["rayStartParams"].pop("redis-password")
    if password_from == "start-params":
        head["rayStartParams"]["redis-password"] = redis.password()
    if redis.access.storage_namespace:
        body["metadata"]["annotations"][STORAGE_NS] = redis.access.storage_namespace
    return body


@pytest.mark.feature("RayClusterGCSFaultTolerance")
@pytest.mark.parametrize("redis, password_from", LEGACY_FORMS, indirect=["redis"])
@pytest.mark.samples("raycluster-gcs-ft-annotation")
def test_deprecated_annotation_enables_fault_tolerance(ctx, redis, password_from):
    """The deprecated way of turning on GCS fault tolerance still works, in each form KubeRay's own tests try: a
    RayCluster annotated ray.io/ft-enabled=true whose head names the Redis in RAY_REDIS_ADDRESS, on a Redis without
    a password, with the password in the head's rayStartParams, with the password as $REDIS_PASSWORD from an env
    variable, and with a storage namespace of its own in the ray.io/external-storage-namespace annotation. Each
    comes up with its head Pod marked fault tolerant (ray.io/ft-enabled=true, the storage namespace asked for, else
    one of the operator's), its GCS keeps its state in that Redis under that namespace, and deleting the cluster
    cleans that state out of Redis."""
    cluster = ctx.create_raycluster(legacy_cluster(ctx, redis, password_from))
    obj = cluster.must_be_provisioned()
    assert FINALIZER in (obj["metadata"].get("finalizers") or []), \
        f"the RayCluster must get the Redis cleanup finalizer {FINALIZER}; observed {obj['metadata'].get('finalizers')}"
    notes = cluster.head_pod().metadata.annotations or {}
    storage = notes.get(STORAGE_NS)
    assert notes.get("ray.io/ft-enabled") == "true" and storage, \
        (f"the head Pod must be annotated ray.io/ft-enabled=true with a {STORAGE_NS}; observed "
         f"{ {k: v for k, v in notes.items() if k.startswith('ray.io/')} }")
    if redis.access.storage_namespace:
        assert storage == redis.access.storage_namespace, \
            (f"the head Pod must carry the storage namespace the RayCluster's {STORAGE_NS} annotation asks for, "
             f"{redis.access.storage_namespace!r}; observed {storage!r}")
    redis.must_hold_keys_of(storage, whose=f"{cluster} ({redis.access})")

    cluster.delete()
    cluster.must_be_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    redis.must_hold_no_keys_of(storage, after=f"{cluster} was deleted, its Redis cleanup done ({redis.access})")
    size = redis.dbsize()
    assert size == 0, f"deleting the RayCluster must clean its Redis storage: DBSIZE is {size}, expected 0"
