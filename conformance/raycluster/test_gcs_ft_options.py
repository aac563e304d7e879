"""GCS fault tolerance in the forms a user configures it (a Redis with or without a password, the password inline
or from a Secret, an ACL user, a storage namespace of their own, a redis:// address, a RayCluster name too long for
the names derived from it), and several RayClusters on one Redis, each in its own storage namespace."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.redis import describe_keys, of_namespace
from rayconformance.testing.handles.redis import ACL_SECRET, ACL_USER, Access

from .gcs_ft import create_counter, detached_actor_must_keep_its_state

STORAGE_NS = "ray.io/external-storage-namespace"
# 52 characters: the name of its Redis cleanup Job (<name>-redis-cleanup) must be cut to fit 63
LONG_NAME = "raycluster-with-a-very-long-name-exceeding-k8s-limit"
FORMS = [  # (how the Redis is reached, the RayCluster's name: None keeps the sample's)
    pytest.param(Access(password="none"), None, id="no-password"),
    pytest.param(Access(password="inline"), None, id="inline-password"),
    # the Redis refuses the ACL user's password sent without the user's name
    pytest.param(Access(username=ACL_USER, password_secret=ACL_SECRET), None, id="acl-user"),
    pytest.param(Access(storage_namespace="conformance-gcs-store"), None, id="storage-namespace"),
    pytest.param(Access(address="redis://redis:6379"), None, id="redis-url"),
    pytest.param(Access(), LONG_NAME, id="long-name"),
]


def head_storage_namespace(cluster, head, expected: str, why: str) -> str:
    """The head Pod's storage namespace annotation, which must be `expected` (`why`: where that comes from)."""
    __tracebackhide__ = True
    got = (head.metadata.annotations or {}).get(STORAGE_NS)
    assert got == expected, (f"expected the head Pod {head.metadata.name} of {cluster} to be annotated "
                             f"{STORAGE_NS}={expected} ({why}); observed {got!r}")
    return got


@pytest.mark.feature("RayClusterGCSFaultToleranceOptions")
@pytest.mark.parametrize("redis, name", FORMS, indirect=["redis"])
@pytest.mark.samples("raycluster-gcs-ft")
def test_fault_tolerance_options_keep_state_and_clean_up(ctx, redis, name):
    """GCS fault tolerance works in each form KubeRay's own tests configure it: on a Redis that asks for no
    password (no redisPassword), with the password written inline (redisPassword.value), with the password of an
    ACL user of the Redis and that user's name (redisUsername), with a storage namespace of the user's own
    (externalStorageNamespace), with the Redis address written as a redis:// URL, and for a RayCluster whose
    52-character name is too long for the names the operator derives from it. Each time the cluster comes
    up with its GCS keeping its state in Redis under the storage namespace asked for (by default the RayCluster's
    UID), a detached actor keeps its state through the loss of the head Pod, and deleting the cluster cleans that
    namespace out of Redis."""
    access = redis.access
    body = ctx.sample("raycluster-gcs-ft")
    body["spec"]["gcsFaultToleranceOptions"] = redis.options()
    if name:
        body["metadata"]["name"] = name
    cluster = ctx.create_raycluster(body)

    # step 1: the cluster comes up on the Redis reached as asked, in the storage namespace asked for
    obj = cluster.must_be_provisioned()
    head = cluster.head_pod()
    storage = head_storage_namespace(
        cluster, head, access.storage_namespace or obj["metadata"]["uid"],
        "its externalStorageNamespace" if access.storage_namespace else "its RayCluster's UID, none being set")
    redis.must_hold_keys_of(storage, whose=f"{cluster} ({access})")

    # step 2: a detached actor keeps its state through the loss of the head Pod
    create_counter(cluster)
    cluster.delete_pod(head)
    cluster.new_head_must_be_ready(head.metadata.uid, ctx.timeouts.long)
    detached_actor_must_keep_its_state(cluster, f"loss of the head Pod ({access})")

    # step 3: deleting the cluster cleans its storage namespace out of Redis
    cluster.must_be_deleted_and_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    redis.must_hold_no_keys_of(storage, after=f"{cluster} was deleted, its Redis cleanup done ({access})")


@pytest.mark.feature("RayClusterGCSStorageIsolation")
@pytest.mark.samples("raycluster-gcs-ft")
def test_clusters_on_one_redis_keep_their_own_storage(ctx, redis):
    """Two RayClusters with GCS fault tolerance on the same Redis, neither naming a storage namespace, each get
    their own: the operator gives each head its RayCluster's UID as storage namespace, and each GCS keeps its
    state in Redis under it. Deleting one of them cleans only its own state out of Redis: the other's stays, and
    the other's detached actor keeps its state even when its head Pod is lost afterwards (its new GCS reloads it
    from Redis)."""
    gone, kept = (ctx.create_raycluster(dict(ctx.sample("raycluster-gcs-ft"), metadata={"name": name}))
                  for name in ("gcsft-a", "gcsft-b"))

    # step 1: each head Pod gets its own RayCluster's UID as storage namespace
    storage = {}
    for cluster in (gone, kept):
        head = cluster.head_pod_must_be_created()
        storage[cluster.name] = head_storage_namespace(cluster, head, cluster.get()["metadata"]["uid"],
                                                       "its own RayCluster's UID, none being set")

    # step 2: both come up, each GCS keeping its state under its own namespace, each with a detached actor
    for cluster in (gone, kept):
        cluster.must_be_provisioned()
        redis.must_hold_keys_of(storage[cluster.name], whose=str(cluster))
        create_counter(cluster)

    # step 3: deleting one cleans its own keys out of Redis, and only its own
    gone.delete()
    gone.must_be_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    left = redis.must_hold_no_keys_of(storage[gone.name], after=f"{gone} was deleted, its Redis cleanup done")
    assert of_namespace(left, storage[kept.name]), \
        (f"deleting {gone} must leave the state of {kept} in Redis (storage namespace {storage[kept.name]}); "
         f"observed the Redis holding {describe_keys(left)}")

    # step 4: the other cluster's state is whole: its new head reloads the detached actor from Redis
    head = kept.head_pod()
    kept.delete_pod(head)
    kept.new_head_must_be_ready(head.metadata.uid, ctx.timeouts.long)
    detached_actor_must_keep_its_state(kept, f"deletion of {gone} and then the loss of its own head Pod")
