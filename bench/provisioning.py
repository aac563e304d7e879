"""Where one RayCluster's provisioning time goes on a cluster, next to a bare `ray start` head + worker on this
machine, measured in the same run; prints each step's seconds and the ratio bed / bare.

    .venv/bin/python bench/provisioning.py [--provider local] [--cluster local-cpu]
        [--operator-profile kuberay-v1.6.1] [--repeat 2]

It brings the cluster up and installs the operator itself (on `local` it waits for the machine's test-bed
lock), and takes both down at the end. Steps of the RayCluster (samples/raycluster-basic.yaml, one head and
one worker), seconds after it was created, each the first time it was observed (watched; the GCS polled
every 0.1 s): head
Pod created, scheduled, container started, GCS healthy (the dashboard's /api/gcs_healthz answers), head
Ready (its readiness probe passed), worker Ready, operator reports ready (RayClusterProvisioned=True and
state ready). Bare (before the cluster comes up and after it is gone): `ray start --head` in its own PID
namespace on 127.0.0.1, then GCS healthy, then a worker `ray start` until the head lists two alive nodes.
The same RayCluster without its worker group is measured too: in the sample the worker Pod starts beside the
head (its init container polling the GCS), which a bare head never has to share the machine with.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from kubernetes import client

from rayconformance import providers
from rayconformance.clusters.toolcache import CACHE
from rayconformance.testing import ray
from rayconformance.kube import client as kube, namespaces
from rayconformance.kube.listwatch import ListWatch
from rayconformance.operator import OperatorError, installer, profiles

POLL = 0.1
HEALTH_TIMEOUT = 5.0  # a starting dashboard may take over a second to answer its first health check
TIMEOUT = 600
STEPS = ("head Pod created", "head scheduled", "head container started", "GCS healthy", "head Ready",
         "worker Ready", "operator reports ready")


TRACE: list[str] | None = None  # with --trace: each poll of the head's GCS health, to see where the time goes


def _get(url: str, timeout: float = 1.0) -> bytes | None:
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read()
            outcome = body[:40].decode(errors="replace")
    except OSError as e:
        body, outcome = None, f"{type(e).__name__}: {getattr(e, 'reason', e)}"
    if TRACE is not None:
        TRACE.append(f"{t:.2f} +{time.monotonic() - t:.2f}s {url} {outcome}")
    return body


def _pod_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def provision_once(api, ns: str, ray_version: str, head_only: bool = False) -> dict[str, float]:
    """Create the sample RayCluster and time its steps; delete it afterwards. The Pods and the RayCluster are
    watched (not polled: a busy poll of the API server would slow the very head it measures on a small machine);
    only the head's GCS health is polled, every POLL seconds, once the head has an IP."""
    core, rc = client.CoreV1Api(api), ray.RayResources(api, ns, "RayCluster")
    body = ray.sample("raycluster-basic", ray_version)
    if head_only:  # the head alone, as a bare `ray start --head` is: no worker starting beside it
        body["spec"]["workerGroupSpecs"] = []
    name = body["metadata"]["name"]
    steps = [s for s in STEPS if not (head_only and s == "worker Ready")]
    seen: dict[str, float] = {}
    state: dict[str, object] = {"head_ip": None, "workers": {}}
    t0 = time.monotonic()

    def mark(step: str, cond: bool) -> None:
        if cond and step not in seen:
            seen[step] = round(time.monotonic() - t0, 2)

    def see_pod(kind: str, pod: dict) -> None:
        labels, status = pod["metadata"].get("labels") or {}, pod.get("status") or {}
        if kind == "DELETED":
            return
        if labels.get("ray.io/node-type") == "head":
            mark("head Pod created", True)
            mark("head scheduled", bool(pod["spec"].get("nodeName")))
            mark("head container started", any("running" in (c.get("state") or {})
                                               for c in status.get("containerStatuses") or []))
            state["head_ip"] = status.get("podIP") or state["head_ip"]
            mark("head Ready", _pod_ready(pod))
        elif labels.get("ray.io/node-type") == "worker":
            state["workers"][pod["metadata"]["name"]] = _pod_ready(pod)
            mark("worker Ready", all(state["workers"].values()))

    def see_cluster(kind: str, obj: dict) -> None:
        st = obj.get("status") or {}
        mark("operator reports ready", st.get("state") == "ready" and any(
            c.get("type") == "RayClusterProvisioned" and c.get("status") == "True" for c in st.get("conditions") or []))

    pods = ListWatch(see_pod, core.list_namespaced_pod, ns, label_selector=f"ray.io/cluster={name}")
    clusters = ListWatch(see_cluster, client.CustomObjectsApi(api).list_namespaced_custom_object, ray.GROUP,
                         ray.VERSION, ns, "rayclusters", field_selector=f"metadata.name={name}")
    with pods, clusters:
        t0 = time.monotonic()
        rc.create(body)
        if TRACE is not None:
            TRACE.append(f"{t0:.2f} RayCluster {name} created")
        while len(seen) < len(steps):
            if time.monotonic() - t0 > TIMEOUT or pods.error or clusters.error:
                raise SystemExit(f"bench: RayCluster {name} did not provision in {TIMEOUT}s; reached {seen} "
                                 f"{pods.error or clusters.error or ''}")
            if state["head_ip"] and "GCS healthy" not in seen:
                mark("GCS healthy", b"success" in (_get(f"http://{state['head_ip']}:8265/api/gcs_healthz",
                                                         HEALTH_TIMEOUT) or b""))
            time.sleep(POLL)
    rc.delete(name)
    deadline = time.monotonic() + TIMEOUT
    while core.list_namespaced_pod(ns, label_selector=f"ray.io/cluster={name}").items:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: the Pods of RayCluster {name} are still there after {TIMEOUT}s")
        time.sleep(0.5)
    return seen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bare_once(ray_bin: Path, image_env: dict[str, str]) -> dict[str, float]:
    """`ray start --head` and one worker, each in its own PID namespace (with its own /proc, as Ray reads its own processes there) so stopping them touches nothing else; with
    the environment the cluster's Ray image gives its containers (`image_env`), as the head Pod has it."""
    tmp = Path(tempfile.mkdtemp(prefix="rc-bare-", dir="/tmp"))
    gcs, dash = _free_port(), _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **image_env}
    common = ["--block", "--num-cpus=1", "--object-store-memory=100000000", "--node-ip-address=127.0.0.1",
              f"--temp-dir={tmp}"]
    head_cmd = [str(ray_bin), "start", "--head", f"--port={gcs}", "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dash}", *common]
    worker_cmd = [str(ray_bin), "start", f"--address=127.0.0.1:{gcs}", *common]
    procs, seen = [], {}
    t0 = time.monotonic()
    try:
        procs.append(subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *head_cmd], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        while b"success" not in (_get(f"http://127.0.0.1:{dash}/api/gcs_healthz", HEALTH_TIMEOUT) or b""):
            if time.monotonic() - t0 > TIMEOUT:
                raise SystemExit(f"bench: bare ray head not healthy in {TIMEOUT}s (logs in {tmp})")
            time.sleep(POLL)
        seen["GCS healthy"] = round(time.monotonic() - t0, 2)
        t1 = time.monotonic()
        procs.append(subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *worker_cmd], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        while True:
            body = _get(f"http://127.0.0.1:{dash}/nodes?view=summary")
            nodes = (json.loads(body).get("data") or {}).get("summary") if body else None
            if nodes and sum(1 for n in nodes if n.get("raylet", {}).get("state") == "ALIVE") >= 2:
                break
            if time.monotonic() - t1 > TIMEOUT:
                raise SystemExit(f"bench: bare ray worker did not join in {TIMEOUT}s (logs in {tmp})")
            time.sleep(POLL)
        seen["worker joined"] = round(time.monotonic() - t0, 2)
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)  # kept when it failed: the error names it
    return seen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--provider", default="local")
    ap.add_argument("--cluster")
    ap.add_argument("--operator-profile", default="kuberay-v1.6.1")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--trace", action="store_true", help="print every poll of the head Pod's GCS health")
    a = ap.parse_args(argv)
    global TRACE
    TRACE = [] if a.trace else None
    profile = profiles.load(a.operator_profile)
    ray_version = profile.ray_version
    ray_bin = CACHE / "venvs" / f"ray-{ray_version}" / "bin" / "ray"
    if not ray_bin.exists():
        raise SystemExit(f"bench: no Ray {ray_version} venv at {ray_bin}; run `make tools`")
    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    run_dir = Path(tempfile.mkdtemp(prefix="rc-bench-"))
    provider = providers.make_provider(a.provider, a.cluster, run_dir)
    image_rule = getattr(getattr(provider.definition, "section", None), "image_rule", None)  # the local bed's rules
    rule = image_rule(f"rayproject/ray:{ray_version}") if image_rule else None
    image_env = dict(rule.env) if rule else {}
    bare_before = bare_once(ray_bin, image_env)  # before the cluster exists: the machine is as idle as it gets
    cluster = provider.up()
    print(f"cluster {cluster.name} up in {cluster.bringup_seconds:.1f}s", flush=True)
    try:
        try:
            installer.install(profile, cluster, run_dir, provider)
            api = kube.api_client(cluster.kubeconfig)
            core = client.CoreV1Api(api)
            ns = namespaces.create(core, "bench-provisioning", "bench")
            try:
                runs = [provision_once(api, ns, ray_version) for _ in range(a.repeat)]
                heads = [provision_once(api, ns, ray_version, head_only=True) for _ in range(a.repeat)]
            finally:
                namespaces.delete(core, ns, 300)
        finally:
            installer.uninstall(profile, cluster, run_dir)
    finally:
        provider.down()
        shutil.rmtree(run_dir, ignore_errors=True)
    bare_after = bare_once(ray_bin, image_env)  # once the cluster is gone again

    print(f"RayCluster provisioning on {a.provider} ({profile.name}, Ray {ray_version}), seconds after creation, "
          f"median of {a.repeat}:")
    for step in STEPS:
        print(f"  {step:26s} {statistics.median(r[step] for r in runs):7.2f}   per run: "
              f"{', '.join(str(r[step]) for r in runs)}")
    bare = {k: statistics.median([bare_before[k], bare_after[k]]) for k in bare_before}
    print(f"bare ray start on this machine (before the cluster / after it): GCS healthy {bare_before['GCS healthy']}"
          f" / {bare_after['GCS healthy']} s, worker joined {bare_before['worker joined']} / "
          f"{bare_after['worker joined']} s")
    pod_to_gcs = statistics.median(r["GCS healthy"] - r["head Pod created"] for r in runs)
    print(f"head Pod created -> GCS healthy: {pod_to_gcs:.2f}s (median); bare ray start --head -> GCS healthy: "
          f"{bare['GCS healthy']:.2f}s")
    print(f"ratio head Pod -> GCS healthy / bare ray start --head -> GCS healthy: {pod_to_gcs / bare['GCS healthy']:.2f}")
    head_to_gcs = statistics.median(r["GCS healthy"] - r["head Pod created"] for r in heads)
    print(f"the same RayCluster without its worker group (the head starting alone, as the bare head does): head Pod "
          f"created -> GCS healthy {head_to_gcs:.2f}s (median of {a.repeat}: "
          f"{', '.join(str(round(r['GCS healthy'] - r['head Pod created'], 2)) for r in heads)}); "
          f"ratio to bare: {head_to_gcs / bare['GCS healthy']:.2f}")
    print(f"ratio RayCluster created -> GCS healthy / bare: "
          f"{statistics.median(r['GCS healthy'] for r in runs) / bare['GCS healthy']:.2f}")
    print(f"ratio operator reports ready / bare head + worker joined: "
          f"{statistics.median(r['operator reports ready'] for r in runs) / bare['worker joined']:.2f}")
    if TRACE:
        print("polls of the head's GCS health (monotonic time, +duration, outcome), RayCluster creations marked:")
        created = 0.0
        for line in TRACE:
            t, rest = line.split(" ", 1)
            if rest.startswith("RayCluster"):
                created = float(t)
            if "127.0.0.1" not in rest:
                print(f"  {float(t) - created:7.2f} {rest}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (profiles.ProfileError, providers.ProviderError, OperatorError, KeyError) as e:
        sys.exit(f"bench: {' '.join(str(e).split())}")
