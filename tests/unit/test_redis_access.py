"""testing.handles.redis: the gcsFaultToleranceOptions each way of reaching the Redis sets, and how the keys of
one storage namespace are told apart (testing.expect.redis)."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect import redis as expect
from rayconformance.testing.handles.redis import ACL_SECRET, ACL_USER, Access


def test_default_access_is_the_sample_s():
    assert Access().options() == {
        "redisAddress": "redis:6379",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "redis-password", "key": "password"}}}}


def test_acl_user_and_storage_namespace_and_url():
    opts = Access(address="redis://redis:6379", username=ACL_USER, password_secret=ACL_SECRET,
                  storage_namespace="ns-1").options()
    assert opts == {"redisAddress": "redis://redis:6379",
                    "redisPassword": {"valueFrom": {"secretKeyRef": {"name": ACL_SECRET, "key": "password"}}},
                    "redisUsername": {"value": ACL_USER}, "externalStorageNamespace": "ns-1"}
    assert str(Access(username=ACL_USER)) == \
        "redisAddress redis:6379, redisUsername ray-gcs, redisPassword from Secret redis-password"


def test_acl_user_name_from_its_secret():
    access = Access(username_secret=ACL_SECRET, password_secret=ACL_SECRET)
    assert access.options()["redisUsername"] == {"valueFrom": {"secretKeyRef": {"name": ACL_SECRET, "key": "username"}}}
    assert str(access) == ("redisAddress redis:6379, redisUsername from Secret redis-gcs-user, redisPassword from "
                           "Secret redis-gcs-user")


def test_keys_of_a_storage_namespace(monkeypatch):
    keys = ["uid-a", "uid-a@KV:x", "uid-b"]
    monkeypatch.setattr(expect, "redis_keys", lambda api, ns, timeout: keys)
    assert expect.of_namespace(keys, "uid-a") == ["uid-a", "uid-a@KV:x"]
    assert expect.redis_must_hold_keys_of(None, "ns", "uid-b", 1, whose="b") == ["uid-b"]
    with pytest.raises(AssertionError, match=r"no key of it \(the Redis holds 3 key\(s\): uid-a, uid-a@KV:x, uid-b\)"):
        expect.redis_must_hold_keys_of(None, "ns", "uid-c", 1, whose="c")
    with pytest.raises(AssertionError, match=r"expected no key of storage namespace 'uid-a' left in Redis after x; "
                                             r"observed 2 key\(s\)"):
        expect.redis_must_hold_no_keys_of(None, "ns", "uid-a", 1, after="x")
    assert expect.redis_must_hold_no_keys_of(None, "ns", "uid-c", 1, after="x") == keys
