"""The embedded GCS store's claim as gcsFaultToleranceOptions.storage shapes it (KubeRay 1.7, alpha gate
GCSFaultToleranceEmbeddedStorage): its size, StorageClass, access modes and subdirectory, kept after its cluster
with deletionPolicy Retain, and a claim of the user's own (claimName) carrying the GCS's data to another cluster."""
from __future__ import annotations

import uuid

import pytest
from kubernetes import client

from rayconformance.testing.expect.raycluster_storage import claim_must_stay, head_claim_must_be_bound
from rayconformance.testing.programs import program

SAMPLE = "raycluster-gcs-store-retained"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
KEEP_WINDOW_S = 15  # how long a retained claim is watched after its cluster is gone


@pytest.fixture
def storage_class(ctx):
    """A StorageClass of the test's own, a copy of the cluster's default one (its provisioner and parameters);
    deleted at the end."""
    storage = client.StorageV1Api(ctx.k8s)
    default = next((c for c in storage.list_storage_class().items
                    if (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"), None)
    if default is None:
        pytest.skip("the cluster has no default StorageClass to copy")
    name = f"rc-{ctx.namespace}"[:63]
    storage.create_storage_class(client.V1StorageClass(
        metadata=client.V1ObjectMeta(name=name), provisioner=default.provisioner, parameters=default.parameters,
        reclaim_policy="Delete", volume_binding_mode=default.volume_binding_mode))
    yield name
    storage.delete_storage_class(name)


@pytest.mark.feature("RayClusterGCSStoreOptions")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.gcsFaultToleranceOptions.storage")
def test_retained_store_claim_carries_the_gcs_data_to_another_cluster(ctx, storage_class):
    """With storage size 2Gi, a StorageClass of its own, accessModes [ReadWriteOncePod] and subPath, the claim the
    operator provisions for the embedded GCS store asks for that size, class and access modes, and the head mounts
    its subPath; with deletionPolicy Retain the RayCluster does not own it, and it stays once the RayCluster is
    gone. A second RayCluster given that claim by claimName (and the same subPath) mounts it and finds what the
    first one's GCS stored (a key of Ray's internal key-value store); it does not own it either, and the claim
    stays after it too."""
    body = ctx.sample(SAMPLE)
    storage = body["spec"]["gcsFaultToleranceOptions"]["storage"]
    storage["storageClassName"] = storage_class
    first = ctx.create_raycluster(body)
    first.must_be_provisioned(ctx.timeouts.medium)

    claim, mount = head_claim_must_be_bound(ctx.k8s, ctx.namespace, first.name, ctx.timeouts.short,
                                            what="the embedded GCS store")
    name = claim.metadata.name
    shaped = {"storage": claim.spec.resources.requests.get("storage"), "class": claim.spec.storage_class_name,
              "accessModes": claim.spec.access_modes, "subPath": mount.get("subPath")}
    asked = {"storage": storage["size"], "class": storage_class, "accessModes": storage["accessModes"],
             "subPath": storage["subPath"]}
    assert shaped == asked, \
        (f"the embedded GCS store's claim {name} and the head's mount of it must be as storage asks {asked}; "
         f"observed {shaped}")
    owners = [f"{o.kind}/{o.name}" for o in claim.metadata.owner_references or []]
    assert f"RayCluster/{first.name}" not in owners, \
        f"with deletionPolicy Retain RayCluster {first.name} must not own its store's claim {name}; owners {owners}"

    value = f"stored-by-{first.name}-{uuid.uuid4().hex[:6]}"
    first.ray_job_must_succeed(program("gcs_kv_put", value=value.encode()))
    first.delete()
    first.must_be_gone(after="its deletion (deletionPolicy Retain)")
    claim_must_stay(ctx.k8s, ctx.namespace, name, KEEP_WINDOW_S, after=f"RayCluster {first.name} (Retain) is gone")

    second_body = ctx.sample(SAMPLE)
    second_body["metadata"]["name"] = f"{first.name}-again"
    second_body["spec"]["gcsFaultToleranceOptions"]["storage"] = {"claimName": name, "subPath": storage["subPath"]}
    second = ctx.create_raycluster(second_body)
    second.must_be_provisioned(ctx.timeouts.medium)
    again, _ = head_claim_must_be_bound(ctx.k8s, ctx.namespace, second.name, ctx.timeouts.short,
                                        what="the claim given by claimName")
    assert again.metadata.uid == claim.metadata.uid, \
        (f"RayCluster {second.name} must mount the claim named by claimName, {name} (uid {claim.metadata.uid}); "
         f"it mounts {again.metadata.name} (uid {again.metadata.uid})")
    logs = second.ray_job_must_succeed(program("gcs_kv_get"))
    assert f"GOT b'{value}'" in logs, \
        (f"RayCluster {second.name}, on the claim RayCluster {first.name} left, must read what that cluster's GCS "
         f"stored ({value!r}); its job printed: {logs[-500:]}")

    second.delete()
    second.must_be_gone(after="its deletion (its claim given by claimName)")
    claim_must_stay(ctx.k8s, ctx.namespace, name, KEEP_WINDOW_S,
                    after=f"RayCluster {second.name}, which was given it by claimName, is gone")
