"""What a real node gives a Pod from its image and securityContext, on the local bed: working directory, declared
volumes, user, capabilities; an unknown Ray tag fails like an unpullable image; what is not honored is reported."""
from __future__ import annotations

import pytest

from bedkit import cstatus, phase, pod_manifest, until

pytestmark = pytest.mark.integration

REDIS_CONF = "dir /data\nappendonly yes\nport 6379\n"  # as KubeRay's external-redis sample configures it


def _events(cpu, ns, name):
    return cpu.kube.get(f"/api/v1/namespaces/{ns}/events",
                        {"fieldSelector": f"involvedObject.name={name}"})["items"]


def test_redis_image_working_dir_and_declared_volume(cpu, ns):
    """KubeRay's external-redis sample: `dir /data` in redis.conf needs the image's /data; each container gets its
    own fresh /data (an image VOLUME), and the working directory is the image's WORKDIR."""
    cpu.create(ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "redis-config"},
                    "data": {"redis.conf": REDIS_CONF}})
    cpu.create(ns, pod_manifest("redis", [
        {"name": "redis", "image": "redis:7.4.0", "command": ["sh", "-c", "redis-server /usr/local/etc/redis/redis.conf"],
         "volumeMounts": [{"name": "config", "mountPath": "/usr/local/etc/redis/redis.conf", "subPath": "redis.conf"}]},
        {"name": "other", "image": "redis:7.4.0",
         "command": ["sh", "-c", "touch /data/mine; echo pwd=$(pwd); echo ls=$(ls /data | tr '\\n' ,); "
                                 "sleep 3600"]}],
        volumes=[{"name": "config", "configMap": {"name": "redis-config"}}]))
    cpu.wait_pod(ns, "redis", phase("Running"), 90)
    until(lambda: "Ready to accept connections" in cpu.logs(ns, "redis", "redis"), 60, "redis ready")
    until(lambda: "ls=" in cpu.logs(ns, "redis", "other"), 30, "other's output")
    out = cpu.logs(ns, "redis", "other")
    assert "pwd=/data" in out
    assert "ls=mine," in out, f"the other container's /data is its own (no appendonly files of redis): {out}"
    p = cpu.pod(ns, "redis")
    assert cstatus(p, "redis")["restartCount"] == 0
    assert "FATAL" not in cpu.logs(ns, "redis", "redis")


def test_ray_image_user_workdir_and_released_version(cpu, ns):
    """The Ray image runs as ray (1000:100) in /home/ray (owned by ray); any released Ray version works (2.53.0,
    which KubeRay's current samples name, installed from PyPI on first use and cached)."""
    cpu.create(ns, pod_manifest("ray", [{
        "name": "ray", "image": "rayproject/ray:2.53.0", "command": ["bash", "-lc",
         "echo id=$(id -u):$(id -g) pwd=$(pwd) home=$(stat -c %u $HOME) caps=$(grep CapEff /proc/self/status | "
         "cut -f2); python -c 'import ray; print(\"ray=\" + ray.__version__)'; touch ~/written && echo wrote"]}],
        restartPolicy="Never"))
    cpu.wait_pod(ns, "ray", phase("Succeeded", "Failed"), 900, "Ray 2.53.0 Pod done (first use installs Ray)")
    out = cpu.logs(ns, "ray", "ray")
    assert "id=1000:100 pwd=/home/ray home=1000 caps=0000000000000000" in out, out
    assert "ray=2.53.0" in out and "wrote" in out, out


def test_security_context_user_and_capabilities(cpu, ns):
    show = "echo id=$(id -u):$(id -g) groups=$(id -G | tr ' ' ,) caps=$(grep CapEff /proc/self/status | cut -f2)"
    cpu.create(ns, pod_manifest("sc", [
        {"name": "default", "image": "busybox:1.36", "command": ["sh", "-c", show]},
        {"name": "ptrace", "image": "busybox:1.36", "command": ["sh", "-c", show],
         "securityContext": {"capabilities": {"add": ["SYS_PTRACE"], "drop": ["NET_RAW"]}}},
        {"name": "user", "image": "busybox:1.36", "command": ["sh", "-c", show],
         "securityContext": {"runAsUser": 1234, "runAsGroup": 5678}}],
        restartPolicy="Never", securityContext={"supplementalGroups": [4000]}))
    cpu.wait_pod(ns, "sc", phase("Succeeded", "Failed"), 60)
    default_caps = 0x00000000a80425fb  # containerd's default set
    out = {c: cpu.logs(ns, "sc", c) for c in ("default", "ptrace", "user")}
    assert f"id=0:0 groups=0,4000 caps={default_caps:016x}" in out["default"], out
    assert f"caps={(default_caps | 1 << 19) & ~(1 << 13):016x}" in out["ptrace"], out
    assert "id=1234:5678 groups=5678,4000 caps=0000000000000000" in out["user"], out


def test_run_as_non_root_refuses_a_root_image(cpu, ns):
    cpu.create(ns, pod_manifest("nonroot", [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                                              "securityContext": {"runAsNonRoot": True}}]))
    p = cpu.wait_pod(ns, "nonroot", lambda p: (cstatus(p, "c").get("state") or {}).get("waiting", {}).get("reason")
                     == "CreateContainerConfigError", 60)
    assert "runAsNonRoot" in cstatus(p, "c")["state"]["waiting"]["message"]


def test_not_honored_requests_are_reported_as_a_warning_event(cpu, ns):
    cpu.create(ns, pod_manifest("ro", [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                                         "securityContext": {"readOnlyRootFilesystem": True,
                                                             "seccompProfile": {"type": "RuntimeDefault"}}}]))
    ev = until(lambda: [e for e in _events(cpu, ns, "ro") if e["reason"] == "NotHonored"], 60, "NotHonored event")
    assert ev[0]["type"] == "Warning"
    assert "readOnlyRootFilesystem" in ev[0]["message"] and "seccompProfile RuntimeDefault" in ev[0]["message"]


def test_unknown_ray_tag_is_an_image_pull_error(cpu, ns):
    cpu.create(ns, pod_manifest("noray", [{"name": "ray", "image": "rayproject/ray:2.99.0",
                                            "command": ["ray", "--version"]}]))
    reasons = set()

    def pull_error():
        w = (cstatus(cpu.pod(ns, "noray"), "ray").get("state") or {}).get("waiting") or {}
        reasons.add(w.get("reason"))
        return w if w.get("reason") in ("ErrImagePull", "ImagePullBackOff") and \
            "Ray 2.99.0 does not exist" in w.get("message", "") else None
    w = until(pull_error, 300, "ErrImagePull for rayproject/ray:2.99.0")
    assert "rayproject/ray:2.99.0" in w["message"]
    ev = [e for e in _events(cpu, ns, "noray") if e["reason"] == "Failed"]
    assert ev and ev[0]["type"] == "Warning" and "does not exist" in ev[0]["message"]
    until(lambda: (pull_error() or True) and "ImagePullBackOff" in reasons, 180, "ImagePullBackOff between retries")
