"""GCS fault tolerance as a Redis ACL user whose name, like its password, the user keeps in a Secret
(gcsFaultToleranceOptions.redisUsername.valueFrom): the GCS and the operator's Redis cleanup both log in as that
user."""
from __future__ import annotations

import pytest

from rayconformance.testing.handles.redis import ACL_SECRET, Access

# the Redis refuses the ACL user's password sent without the user's name (samples/redis.yaml)
FROM_SECRET = Access(username_secret=ACL_SECRET, password_secret=ACL_SECRET)


@pytest.mark.feature("RayClusterGCSFaultToleranceOptions")
@pytest.mark.parametrize("redis", [pytest.param(FROM_SECRET, id="acl-user-from-secret")], indirect=True)
@pytest.mark.samples("raycluster-gcs-ft")
@pytest.mark.covers("RayCluster:spec.gcsFaultToleranceOptions.redisUsername.valueFrom",
                    "RayCluster:spec.gcsFaultToleranceOptions.redisPassword.valueFrom")
def test_acl_user_named_in_a_secret_keeps_and_cleans_state(ctx, redis):
    """With redisUsername and redisPassword both taken from the Secret of a Redis ACL user (valueFrom secretKeyRef),
    the cluster comes up with its GCS keeping its state in that Redis under the RayCluster's UID (the Redis lets
    the GCS in only as that user), and deleting the cluster cleans that state out of Redis (the operator's cleanup
    Job logs in as that user too)."""
    body = ctx.sample("raycluster-gcs-ft")
    body["spec"]["gcsFaultToleranceOptions"] = redis.options()
    cluster = ctx.create_raycluster(body)

    # step 1: the GCS keeps its state in Redis, logged in as the user the Secret names
    storage = cluster.must_be_provisioned()["metadata"]["uid"]
    redis.must_hold_keys_of(storage, whose=f"{cluster} ({redis.access})")

    # step 2: the Redis cleanup on deletion logs in as that user too
    cluster.must_be_deleted_and_gone(ctx.timeouts.long, after="its deletion (and its Redis cleanup)")
    redis.must_hold_no_keys_of(storage, after=f"{cluster} was deleted, its Redis cleanup done ({redis.access})")
