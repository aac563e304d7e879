"""The node agent honours the kubelet contract for plain Pods (against the real control plane)."""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from bedkit import alive, cstatus, phase, pod_manifest, pod_processes, ready, until

pytestmark = pytest.mark.integration


def test_job_runs_to_succeeded_and_logs_are_readable(cpu, ns):
    cpu.create(ns, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "hello"},
                    "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
                        {"name": "main", "image": "busybox:1.36",
                         "command": ["sh", "-c", "echo line-1; echo line-2; echo job-ran-on-$(hostname)"]}]}}}})
    job = until(lambda: (cpu.batch.read_namespaced_job("hello", ns).status.succeeded or 0) >= 1 and
                cpu.batch.read_namespaced_job("hello", ns), 90, "Job succeeded")
    assert job.status.failed in (None, 0)
    pod = cpu.pods(ns, "job-name=hello")[0]
    assert pod["status"]["phase"] == "Succeeded"
    term = cstatus(pod, "main")["state"]["terminated"]
    assert term["exitCode"] == 0 and term["reason"] == "Completed"
    out = cpu.logs(ns, pod["metadata"]["name"], "main")
    assert f"job-ran-on-{pod['metadata']['name']}" in out
    assert cpu.logs(ns, pod["metadata"]["name"], "main", tail_lines=1).strip() == \
        f"job-ran-on-{pod['metadata']['name']}"


def test_failing_container_restarts_with_backoff(cpu, ns):
    cpu.create(ns, pod_manifest("crash", [{"name": "c", "image": "busybox", "command": [
        "sh", "-c", "echo boom-$(cat /proc/sys/kernel/random/uuid); exit 3"]}]))
    seen = set()

    def restarted_twice():
        p = cpu.pod(ns, "crash")
        st = cstatus(p, "c")
        seen.add((st.get("state") or {}).get("waiting", {}).get("reason") if st else None)
        return p if st.get("restartCount", 0) >= 2 else None
    p = until(restarted_twice, 120, "restartCount >= 2")
    st = cstatus(p, "c")
    assert st["lastState"]["terminated"]["exitCode"] == 3
    assert st["lastState"]["terminated"]["reason"] == "Error"
    assert "CrashLoopBackOff" in seen
    assert p["status"]["phase"] == "Running"  # restartPolicy Always: restarting, not failed
    prev = cpu.logs(ns, "crash", "c", previous=True)
    assert prev.startswith("boom-")


def test_graceful_deletion_runs_prestop_then_sigterm(cpu, ns):
    shared = Path(tempfile.mkdtemp(prefix="rayconf-itest-", dir="/var/tmp"))
    try:
        trap = ("trap 'date +%s.%N > /shared/term; exit 0' TERM; echo started; "
                "while true; do sleep 0.2; done")
        cpu.create(ns, pod_manifest("graceful", [{
            "name": "c", "image": "busybox", "command": ["sh", "-c", trap],
            "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
            "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c",
                                                           "date +%s.%N > /shared/prestop; sleep 2"]}}}}],
            terminationGracePeriodSeconds=20,
            volumes=[{"name": "shared", "hostPath": {"path": str(shared), "type": "Directory"}}]))
        p = cpu.wait_pod(ns, "graceful", phase("Running"), 60)
        until(lambda: "started" in cpu.logs(ns, "graceful", "c"), 30, "container output")
        pids = pod_processes(p["metadata"]["uid"])
        assert pids, "the Pod's processes carry the marker env var"
        t0 = time.time()
        cpu.delete_pod(ns, "graceful")
        cpu.wait_gone(ns, "graceful", 60)
        elapsed = time.time() - t0
        prestop, term = float((shared / "prestop").read_text()), float((shared / "term").read_text())
        assert term >= prestop + 1.9, "SIGTERM comes after the preStop hook finished"
        assert elapsed < 15, "the container handled SIGTERM, so no wait for the full grace period"
        assert not [pid for pid in pids if alive(pid)]
        assert not pod_processes(p["metadata"]["uid"])
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_pid1_shell_ignores_sigterm_and_is_killed_after_grace(cpu, ns):
    cpu.create(ns, pod_manifest("stubborn", [{"name": "c", "image": "busybox",
                                              "command": ["sh", "-c", "while true; do sleep 1; done"]}],
                                terminationGracePeriodSeconds=3))
    p = cpu.wait_pod(ns, "stubborn", phase("Running"), 60)
    uid = p["metadata"]["uid"]
    last: dict = {}
    t0 = time.time()
    cpu.delete_pod(ns, "stubborn")

    def gone():
        cur = cpu.pod(ns, "stubborn")
        if cur is not None:
            last.update(cur)
        return cur is None
    until(gone, 60, "pod deleted")
    elapsed = time.time() - t0
    assert elapsed >= 3, "sh as PID 1 has no SIGTERM handler: only SIGKILL at the end of the grace period stops it"
    assert not pod_processes(uid)
    # the last status before the final delete: terminal phase, container killed by SIGKILL
    if last.get("status", {}).get("phase") in ("Failed", "Succeeded"):
        assert last["status"]["phase"] == "Failed"
        assert cstatus(last, "c")["state"]["terminated"]["exitCode"] == 137


def test_init_containers_env_volumes_and_downward_api(cpu, ns):
    cpu.create(ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"},
                    "data": {"greeting": "hello-from-configmap", "mode": "fast"}})
    cpu.create(ns, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                    "stringData": {"password": "s3cret"}})
    script = r"""
echo "INIT=$(cat /work/init.txt)"
echo "GREETING=$(cat /etc/conf/greeting)"
echo "LABELS=$(cat /etc/podinfo/labels | tr '\n' ',')"
echo "PODNAME_FILE=$(cat /etc/podinfo/name)"
echo "TOKEN_LEN=$(wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token)"
echo "SA_NS=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)"
echo "CA=$(head -1 /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"
echo "HOSTNAME_CMD=$(hostname)"
echo "RESOLV=$(grep -v '^#' /etc/resolv.conf | tr '\n' '|')"
echo "HOSTS=$(grep "$(hostname)" /etc/hosts | tr '\t' ' ')"
echo "SHM_KB=$(df -k /dev/shm | tail -1 | awk '{print $2}')"
echo "PID1=$$$$"  # $$ is an escape for $ in Kubernetes command expansion
echo "ARG0=$0"
env | sort | sed 's/^/ENV:/'
"""
    cpu.create(ns, pod_manifest("contract", [{
        "name": "main", "image": "busybox", "command": ["sh", "-c", script, "$(GREETING_ENV)"],
        "env": [{"name": "A", "value": "alpha"},
                {"name": "MODE_VAL", "valueFrom": {"configMapKeyRef": {"name": "conf", "key": "mode"}}},
                {"name": "COMBINED", "value": "$(A)-$(MODE_VAL)-$$(A)-$(LATER)"},
                {"name": "LATER", "value": "defined-after-use"},
                {"name": "GREETING_ENV", "valueFrom": {"configMapKeyRef": {"name": "conf", "key": "greeting"}}},
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
                {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "MY_APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory",
                                                                      "divisor": "1Mi"}}}],
        "envFrom": [{"configMapRef": {"name": "conf"}, "prefix": "CM_"}],
        "resources": {"limits": {"memory": "256Mi", "cpu": "500m"}},
        "volumeMounts": [{"name": "work", "mountPath": "/work"}, {"name": "conf", "mountPath": "/etc/conf"},
                         {"name": "podinfo", "mountPath": "/etc/podinfo"},
                         {"name": "shm", "mountPath": "/dev/shm"}]}],
        labels={"app": "contract-test"}, restartPolicy="Never",
        initContainers=[{"name": "prepare", "image": "busybox",
                         "command": ["sh", "-c", "echo prepared-by-init > /work/init.txt"],
                         "volumeMounts": [{"name": "work", "mountPath": "/work"}]}],
        volumes=[{"name": "work", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "conf"}},
                 {"name": "podinfo", "downwardAPI": {"items": [
                     {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                     {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                 {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "100Mi"}}]))
    p = cpu.wait_pod(ns, "contract", phase("Succeeded", "Failed"), 90)
    assert p["status"]["phase"] == "Succeeded", p["status"]
    init = p["status"]["initContainerStatuses"][0]
    assert init["state"]["terminated"]["reason"] == "Completed"
    conds = {c["type"]: c for c in p["status"]["conditions"]}
    assert conds["Initialized"]["status"] == "True" and "PodScheduled" in conds
    out = cpu.logs(ns, "contract", "main")
    lines = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("ENV:"))
    env = dict(line[4:].split("=", 1) for line in out.splitlines() if line.startswith("ENV:") and "=" in line)
    assert lines["INIT"] == "prepared-by-init"
    assert lines["GREETING"] == "hello-from-configmap"
    assert 'app="contract-test"' in lines["LABELS"] and lines["PODNAME_FILE"] == "contract"
    assert int(lines["TOKEN_LEN"]) > 100 and lines["SA_NS"] == ns
    assert lines["CA"].startswith("-----BEGIN CERTIFICATE")
    assert lines["HOSTNAME_CMD"] == "contract"
    assert lines["RESOLV"] == (f"nameserver {cpu.defn.dns_address}|search {ns}.svc.cluster.local "
                               "svc.cluster.local cluster.local|options ndots:5|")
    assert lines["HOSTS"].startswith(p["status"]["podIP"] + " contract")
    assert 100 * 1024 - 1024 <= int(lines["SHM_KB"]) <= 100 * 1024 + 1024
    assert lines["PID1"] == "1"
    assert env["COMBINED"] == "alpha-fast-$(A)-$(LATER)"  # only earlier variables expand; $$ escapes
    assert env["PASSWORD"] == "s3cret" and env["CM_greeting"] == "hello-from-configmap"
    assert env["MY_POD_IP"] == p["status"]["podIP"] and env["MY_NODE"] == p["spec"]["nodeName"]
    assert env["MY_APP"] == "contract-test" and env["MEM_MI"] == "256"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["RAY_USAGE_STATS_ENABLED"] == "0"
    assert lines["ARG0"] == "hello-from-configmap"  # $(VAR) in command/args, expanded by the agent


def test_service_account_token_authenticates_via_kubernetes_service(cpu, ns):
    script = r"""
import json, os, ssl, urllib.request, urllib.error
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
ctx = ssl.create_default_context(cafile=sa + "/ca.crt")
url = "https://%s:%s/api/v1/namespaces/%s/pods" % (os.environ["KUBERNETES_SERVICE_HOST"],
      os.environ["KUBERNETES_SERVICE_PORT"], open(sa + "/namespace").read())
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + open(sa + "/token").read()})
try:
    urllib.request.urlopen(req, context=ctx, timeout=10)
    print("STATUS 200")
except urllib.error.HTTPError as e:
    print("STATUS", e.code, json.loads(e.read())["message"])
"""
    cpu.create(ns, pod_manifest("sa", [{"name": "c", "image": "python:3.11", "command": ["python3", "-c", script]}],
                                restartPolicy="Never"))
    cpu.wait_pod(ns, "sa", phase("Succeeded", "Failed"), 90)
    out = cpu.logs(ns, "sa", "c")
    # authenticated as the Pod's service account (and, having no RBAC, forbidden to list Pods)
    assert "STATUS 403" in out and f"system:serviceaccount:{ns}:default" in out, out


def test_probes_readiness_and_liveness(cpu, ns):
    cpu.create(ns, pod_manifest("probed", [{
        "name": "web", "image": "python:3.11",
        "command": ["sh", "-c", "sleep 2; touch /tmp/ready; exec python3 -m http.server 8080"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"exec": {"command": ["sh", "-c", "test -f /tmp/ready"]}, "periodSeconds": 1},
        "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "initialDelaySeconds": 3, "periodSeconds": 2},
        "startupProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 30}}]))
    cpu.create(ns, pod_manifest("unhealthy", [{
        "name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
        "livenessProbe": {"tcpSocket": {"port": 9}, "periodSeconds": 1, "failureThreshold": 2,
                          "terminationGracePeriodSeconds": 1}}]))
    p = cpu.wait_pod(ns, "probed", ready, 60, "readiness via exec probe")
    assert cstatus(p, "web")["started"] is True
    bad = cpu.wait_pod(ns, "unhealthy", lambda x: cstatus(x, "c").get("restartCount", 0) >= 1, 60,
                       "restart after failed liveness probe")
    assert cstatus(bad, "c")["lastState"]["terminated"]["exitCode"] == 137
    p = cpu.pod(ns, "probed")
    assert cstatus(p, "web")["restartCount"] == 0 and ready(p)


def test_unmapped_image_fails_like_an_unpullable_image(cpu, ns):
    cpu.create(ns, pod_manifest("noimage", [{"name": "c", "image": "registry.invalid/nothing:1"}]))
    reasons = set()

    def both():
        st = cstatus(cpu.pod(ns, "noimage"), "c")
        reasons.add(((st.get("state") or {}).get("waiting") or {}).get("reason"))
        return {"ErrImagePull", "ImagePullBackOff"} <= reasons
    until(both, 60, "ErrImagePull then ImagePullBackOff")
    assert cpu.pod(ns, "noimage")["status"]["phase"] == "Pending"


def test_image_not_present_with_pull_policy_never_is_err_image_never_pull(cpu, ns):
    cpu.create(ns, pod_manifest("neverpull", [{"name": "c", "image": "rayconformance/nothing:1",
                                               "imagePullPolicy": "Never"}]))
    p = cpu.wait_pod(ns, "neverpull", lambda x: ((cstatus(x, "c").get("state") or {}).get("waiting") or {}).get(
        "reason") == "ErrImageNeverPull", 60, "ErrImageNeverPull")
    assert "not present with pull policy of Never" in cstatus(p, "c")["state"]["waiting"]["message"]
    assert p["status"]["phase"] == "Pending"


def test_container_status_json_shape(cpu, ns):
    cpu.create(ns, pod_manifest("shape", [{"name": "a", "image": "busybox", "command": ["sleep", "3600"]},
                                          {"name": "b", "image": "busybox", "command": ["sleep", "3600"]}]))
    p = cpu.wait_pod(ns, "shape", ready, 60)
    names = [s["name"] for s in p["status"]["containerStatuses"]]
    assert names == ["a", "b"]
    for s in p["status"]["containerStatuses"]:
        assert s["ready"] and s["started"] and s["restartCount"] == 0
        assert s["containerID"].startswith("rayconformance://") and "running" in s["state"]
    assert p["status"]["podIP"].startswith("10.244.") and p["status"]["hostIP"] == cpu.defn.host_address
    assert json.dumps(p["status"]["startTime"])


def test_sidecar_init_container_stays_up_and_stops_when_the_job_is_done(cpu, ns):
    cpu.create(ns, pod_manifest("sidecar", [{"name": "main", "image": "busybox", "command": [
        "sh", "-c", "test -f /shared/sidecar-was-here && echo main-saw-sidecar"],
        "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}],
        restartPolicy="Never", terminationGracePeriodSeconds=2,
        initContainers=[{"name": "helper", "image": "busybox", "restartPolicy": "Always",
                         "command": ["sh", "-c", "touch /shared/sidecar-was-here; exec sleep 3600"],
                         "startupProbe": {"exec": {"command": ["test", "-f", "/shared/sidecar-was-here"]},
                                          "periodSeconds": 1},
                         "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}],
        volumes=[{"name": "shared", "emptyDir": {}}]))
    p = cpu.wait_pod(ns, "sidecar", phase("Succeeded", "Failed"), 60)
    assert p["status"]["phase"] == "Succeeded"
    assert "main-saw-sidecar" in cpu.logs(ns, "sidecar", "main")
    helper = p["status"]["initContainerStatuses"][0]
    assert "terminated" in helper["state"] and helper["restartCount"] == 0
    assert not pod_processes(p["metadata"]["uid"])


def test_force_delete_kills_at_once(cpu, ns):
    cpu.create(ns, pod_manifest("forced", [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
                                terminationGracePeriodSeconds=300))
    p = cpu.wait_pod(ns, "forced", ready, 60)
    uid = p["metadata"]["uid"]
    assert pod_processes(uid)
    cpu.delete_pod(ns, "forced", grace=0)  # the object is gone at once; the agent sees DELETED and kills
    until(lambda: not pod_processes(uid), 15, "processes of the force-deleted Pod gone")
