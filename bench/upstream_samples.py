"""KubeRay's own sample manifests, unmodified, on a cluster: how many reach their goal, and why the others do not.

    .venv/bin/python bench/upstream_samples.py [--provider local] [--cluster local-cpu]
        [--operator-profile kuberay-v1.6.1] [--only SUBSTRING ...] [--timeout 720] [--jobs 3] [--list]

The samples are the top-level `config/samples/*.yaml` of the KubeRay module at the profile's version (the tool
cache's copy, else the Go module cache). Skipped, with the reason: samples that need hardware (GPUs, TPUs), cloud
services (GKE, AWS load balancers, buckets) or internet egress (runtime_env working_dir/pip from the internet,
package installs, model downloads), files with no Ray resource, and samples creating a kind the cluster does not
serve (a third-party scheduler's CRD). Every other sample is applied as is in a fresh namespace (the only change:
that namespace), and is "reached" when each of its Ray resources reaches its goal: RayCluster state ready, RayJob
jobDeploymentStatus Complete with jobStatus SUCCEEDED (in InteractiveMode with no jobId: Waiting for the user's job,
its RayCluster ready), RayService Ready, RayCronJob a RayJob scheduled. A Secret that a sample's own comments tell
the user to create first (`kubectl create secret generic NAME --from-literal=KEY=VALUE`) is created as told.

A failure prints its cause: the resource's last status, Pods that are not ready (with waiting reasons) and Warning
events. A sample ends failed before its timeout when it cannot heal: a Pod larger than any node or than any node
has left beside the cluster's own Pods and the sample's others, Pods together larger than what the nodes leave, an
image that cannot be pulled or a scheduler the cluster does not run (after 60 s), a RayJob selecting a RayCluster
the sample does not create (once the operator says RayClusterNotFound).
`--jobs` samples run at once, each in its own namespace.

On a provider that loads images into its nodes (kind), the images the samples name are loaded when they can be
built offline (`rayproject/ray:<release>` is built first when missing, as `make kind-images` does); any other
image is left out, so its Pods fail to pull it, as on a node with no registry. `--provider kind` alone picks
`kind-cpu-open` (kind-cpu with Pods allowed on the control-plane node: room on a machine with few cores).

It brings the cluster up and installs the operator itself (on `local` it waits for the machine's test-bed lock),
and takes both down at the end.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from kubernetes import client

from rayconformance.clusters.toolcache import CACHE
from rayconformance.fixtures import kube, namespaces, profiles, providers
from rayconformance.fixtures.operator import installer

KIND_CLUSTER = "kind-cpu-open"  # on a 2-core machine kind-cpu's one worker leaves no room for most samples
RAY_KINDS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices",
             "RayCronJob": "raycronjobs"}
HARDWARE = re.compile(r"nvidia\.com/gpu|google\.com/tpu|amd\.com/gpu|aws\.amazon\.com/neuron|habana\.ai")
CLOUD = re.compile(r"\bgke\b|\.gke\.|cloud\.google\.com|gcsfuse|gcs-fuse|alb\.ingress|eks\.amazonaws|\bs3://|\bgs://|"
                   r"azure|application-networking\.k8s\.aws|agc")
EGRESS = re.compile(r"(working_dir|py_modules|pip|uv|requirements)\W.*https?://|https?://[^\s\"']*\.(zip|whl|tar\.gz)|"
                    r"\bpip3? install\b|\buv (pip|run|add)\b|\bpip:\s|[\"']pip[\"']\s*:|huggingface|hf_token|HF_TOKEN|"
                    r"\bwget https?://|\bcurl [^|]*https?://|git clone", re.I)


def samples_dir(version: str) -> Path:
    d = CACHE / f"kuberay-{version}" / "config" / "samples"
    if d.is_dir():
        return d
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    d = Path(out) / f"github.com/ray-project/kuberay/ray-operator@{version}" / "config" / "samples"
    if not d.is_dir():
        raise SystemExit(f"bench: no KubeRay {version} samples in the tool cache or the Go module cache; "
                         f"run `bash clusters/local/build-tools.sh kuberay@{version}`")
    return d


def _code(text: str) -> str:
    """The manifest without YAML comments (links in comments are no egress)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))


def classify(path: Path) -> tuple[str | None, list[dict]]:
    """(reason to skip or None, the objects)."""
    text = path.read_text()
    objs = [o for o in yaml.safe_load_all(text) if o]
    code = _code(text)
    if not any(o.get("kind") in RAY_KINDS for o in objs):
        return "no Ray resource (" + ", ".join(sorted({o.get("kind", "?") for o in objs})) + ")", objs
    if HARDWARE.search(code):
        return "needs hardware: " + HARDWARE.search(code).group(0), objs
    m = CLOUD.search(code) or CLOUD.search(path.name)
    if m:
        return f"needs a cloud service: {m.group(0)}", objs
    m = EGRESS.search(code)
    if m:
        return f"needs internet egress: {m.group(0)[:60]!r}", objs
    return None, objs


def _ray_call(co, verb: str, ns: str, obj: dict, *body):
    """One CustomObjectsApi namespaced call (get, delete, patch) on a sample's Ray resource."""
    return getattr(co, f"{verb}_namespaced_custom_object")("ray.io", obj["apiVersion"].split("/")[1], ns,
                                                           RAY_KINDS[obj["kind"]], obj["metadata"]["name"], *body)


def _status(api, ns: str, obj: dict) -> dict:
    try:
        return _ray_call(client.CustomObjectsApi(api), "get", ns, obj).get("status") or {}
    except client.ApiException as e:
        return {"error": f"{e.status} {e.reason}"}


def reached(api, ns: str, obj: dict) -> tuple[bool, bool, str]:
    """(reached, failed for good, short status)."""
    st = _status(api, ns, obj)
    kind = obj["kind"]
    if kind == "RayCluster":
        return st.get("state") == "ready", False, f"state={st.get('state')} reason={st.get('reason', '')}"
    if kind == "RayJob":
        js, ds = st.get("jobStatus"), st.get("jobDeploymentStatus")
        if (obj.get("spec") or {}).get("submissionMode") == "InteractiveMode" and not obj["spec"].get("jobId"):
            # the user submits the job: Waiting with its cluster ready is the goal (the RayJob's copy of the
            # cluster's status stops being updated once the cluster is ready, so the RayCluster itself is read)
            name = st.get("rayClusterName")
            cluster = _status(api, ns, {"apiVersion": obj["apiVersion"], "kind": "RayCluster",
                                        "metadata": {"name": name}}).get("state") if name else None
            return ds == "Waiting" and cluster == "ready", False, \
                f"InteractiveMode: jobDeploymentStatus={ds} (goal Waiting) RayCluster {name} state={cluster}"
        done = ds in ("Complete", "Failed") or js in ("SUCCEEDED", "FAILED", "STOPPED")
        return js == "SUCCEEDED" and ds in ("Complete", None, ""), done and js != "SUCCEEDED", \
            f"jobDeploymentStatus={ds} jobStatus={js} message={str(st.get('message', ''))[:200]}"
    if kind == "RayService":
        conds = {c["type"]: c for c in st.get("conditions") or []}
        ready = conds.get("Ready", {}).get("status") == "True"
        return ready, False, f"Ready={conds.get('Ready', {}).get('status')} " \
            f"reason={conds.get('Ready', {}).get('reason')} serviceStatus={st.get('serviceStatus')}"
    if kind == "RayCronJob":
        return bool(st.get("lastScheduleTime")), False, f"lastScheduleTime={st.get('lastScheduleTime')}"
    return False, True, "unknown kind"


def cause(api, ns: str, statuses: list[str]) -> str:
    core = client.CoreV1Api(api)
    parts = list(statuses)
    for p in core.list_namespaced_pod(ns).items:
        ready = any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        if ready or p.status.phase == "Succeeded":
            continue
        waits = []
        for cs in (p.status.init_container_statuses or []) + (p.status.container_statuses or []):
            st = cs.state
            if st.waiting:
                waits.append(f"{cs.name}: {st.waiting.reason} {(st.waiting.message or '')[:160]}")
            elif st.terminated and st.terminated.exit_code:
                waits.append(f"{cs.name}: exit {st.terminated.exit_code} {st.terminated.reason}")
        sched = [c.message for c in p.status.conditions or [] if c.type == "PodScheduled" and c.status == "False"]
        parts.append(f"Pod {p.metadata.name} {p.status.phase}" + (f" [{'; '.join(waits)}]" if waits else "")
                     + (f" unschedulable: {sched[0][:160]}" if sched else ""))
    seen = set()
    for e in core.list_namespaced_event(ns).items:
        if e.type == "Warning" and e.reason not in ("NotHonored",) and (e.reason, e.message) not in seen:
            seen.add((e.reason, e.message))
            parts.append(f"Warning {e.reason} {e.involved_object.kind}/{e.involved_object.name}: "
                         f"{(e.message or '')[:200]}")
    return "\n      ".join(parts[:12])


DOCUMENTED_SECRET = re.compile(r"^\s*#\s*kubectl create secret generic (\S+)((?:\s+--from-literal=\S+)+)", re.M)
LITERAL = re.compile(r"--from-literal=([^=\s]+)=(\S+)")


def documented_secrets(text: str) -> dict[str, dict[str, str]]:
    """Secrets the sample's comments tell the user to create before applying it: name -> data."""
    return {m.group(1): {k: v.strip("'\"") for k, v in LITERAL.findall(m.group(2))}
            for m in DOCUMENTED_SECRET.finditer(text)}


PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


def _pull_failure(core, ns: str) -> str | None:
    """A container whose image cannot be pulled (on a node with no registry this does not heal)."""
    for p in core.list_namespaced_pod(ns).items:
        for cs in (p.status.init_container_statuses or []) + (p.status.container_statuses or []):
            if cs.state.waiting and cs.state.waiting.reason in PULL_ERRORS:
                return f"Pod {p.metadata.name} cannot pull {cs.image} ({cs.state.waiting.reason})"
    return None


RUN_ID = "bench"  # the run label of the samples' namespaces


def pod_requests(pod) -> dict[str, float]:
    """What the scheduler counts for a Pod: per resource, the larger of the containers' sum and any init container
    (a container with limits and no requests requests its limits)."""
    from kubernetes.utils import parse_quantity

    def need(c) -> dict[str, float]:
        r = c.resources
        asked = {**((r.limits if r else None) or {}), **((r.requests if r else None) or {})}
        return {k: float(parse_quantity(v)) for k, v in asked.items() if k in ("cpu", "memory")}

    total: dict[str, float] = {}
    for c in pod.spec.containers:
        for k, v in need(c).items():
            total[k] = total.get(k, 0.0) + v
    for c in pod.spec.init_containers or []:
        for k, v in need(c).items():
            total[k] = max(total.get(k, 0.0), v)
    return total


def _never_fits(core, ns: str) -> str | None:
    """The sample cannot be scheduled whatever else finishes: one unscheduled Pod asks for more CPU or memory than
    any schedulable node has, or than any of them has left beside the cluster's own Pods (namespaces not made for
    samples) and the sample's other Pods bound there, or the sample's Pods together ask for more than those nodes
    have beside the cluster's own Pods. Pods being deleted count as gone."""
    from kubernetes.utils import parse_quantity
    nodes = [n for n in core.list_node().items
             if not n.spec.unschedulable and not any(t.effect == "NoSchedule" for t in n.spec.taints or [])]
    names = {n.metadata.name for n in nodes}
    samples = {n.metadata.name for n in core.list_namespace(label_selector=f"{namespaces.RUN_LABEL}={RUN_ID}").items}
    live = [p for p in core.list_pod_for_all_namespaces().items
            if p.status.phase not in ("Succeeded", "Failed") and not p.metadata.deletion_timestamp]
    mine = [p for p in live if p.metadata.namespace == ns]
    if not any(not p.spec.node_name for p in mine):
        return None
    unit = {"cpu": ""}
    packed = None  # said last: the sample as a whole may not fit either, which says more
    for res in ("cpu", "memory"):
        alloc = [float(parse_quantity(n.status.allocatable.get(res, "0"))) for n in nodes]
        for p in mine:
            asked = pod_requests(p).get(res, 0.0)
            if not p.spec.node_name and asked > max(alloc, default=0.0):
                return (f"Pod {p.metadata.name} asks for {res} {asked:g}{unit.get(res, ' bytes')}; the largest "
                        f"schedulable node has {max(alloc, default=0.0):g}{unit.get(res, ' bytes')} allocatable")
        staying = [p for p in live if p.spec.node_name in names and (p.metadata.namespace not in samples or p in mine)]
        left = {n.metadata.name: a - sum(pod_requests(p).get(res, 0.0) for p in staying
                                         if p.spec.node_name == n.metadata.name) for n, a in zip(nodes, alloc)}
        for p in mine:
            asked = pod_requests(p).get(res, 0.0)
            if not packed and not p.spec.node_name and asked > max(left.values(), default=0.0):
                packed = (f"Pod {p.metadata.name} asks for {res} {asked:g}{unit.get(res, ' bytes')}; no schedulable "
                          f"node has that left beside the cluster's own Pods and the sample's others (the most: "
                          f"{max(left.values(), default=0.0):g}{unit.get(res, ' bytes')})")
        system = sum(pod_requests(p).get(res, 0.0) for p in live
                     if p.spec.node_name in names and p.metadata.namespace not in samples)
        together = sum(pod_requests(p).get(res, 0.0) for p in mine)
        if together > sum(alloc) - system:
            return (f"the sample's Pods ask for {res} {together:g}{unit.get(res, ' bytes')} together; the schedulable "
                    f"nodes have {sum(alloc) - system:g}{unit.get(res, ' bytes')} beside the cluster's own Pods")
    return packed


def _no_scheduler(core, ns: str) -> str | None:
    """Pods left to a scheduler the cluster does not run (never scheduled, not even marked unschedulable)."""
    for p in core.list_namespaced_pod(ns).items:
        if p.spec.scheduler_name not in (None, "default-scheduler") and not p.spec.node_name and \
                not any(c.type == "PodScheduled" for c in p.status.conditions or []):
            return f"Pod {p.metadata.name} waits for scheduler {p.spec.scheduler_name!r}, which the cluster does not run"
    return None


def _selects_a_cluster_never_made(core, ns: str, objs: list[dict]) -> str | None:
    """A RayJob whose clusterSelector names a RayCluster the sample does not create, once the operator says it is
    not found (it waits for the user to create it; nothing in the sample will)."""
    made = {o["metadata"].get("name") for o in objs if o["kind"] == "RayCluster"}
    for o in objs:
        wanted = ((o.get("spec") or {}).get("clusterSelector") or {}).get("ray.io/cluster")
        if o["kind"] != "RayJob" or not wanted or wanted in made:
            continue
        said = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={o['metadata']['name']},"
                                                             "reason=RayClusterNotFound").items
        if said:
            return f"RayJob {o['metadata']['name']} selects RayCluster {wanted}, which the sample does not create " \
                   f"(the operator: RayClusterNotFound)"
    return None


def unserved(dyn, objs: list[dict]) -> str | None:
    """The first kind the sample creates that the cluster does not serve (a third-party CRD not installed)."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError
    for o in objs:
        try:
            dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
        except ResourceNotFoundError:
            return f"{o['kind']} ({o['apiVersion']})"
    return None


def run_sample(api, path: Path, objs: list[dict], timeout: float) -> tuple[bool, str, float]:
    from kubernetes import dynamic
    core = client.CoreV1Api(api)
    ns = namespaces.create(core, "sample-" + re.sub(r"[^a-z0-9]+", "-", path.stem.lower())[:30], RUN_ID)
    dyn = dynamic.DynamicClient(api)
    t0 = time.monotonic()
    objs = copy.deepcopy(objs)
    try:
        for name, data in documented_secrets(path.read_text()).items():
            core.create_namespaced_secret(ns, client.V1Secret(metadata=client.V1ObjectMeta(name=name),
                                                              string_data=data))
        for o in objs:
            res = dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
            try:
                made = res.create(body=o, namespace=ns if res.namespaced else None)
                o["metadata"]["name"] = made.metadata.name  # a generateName sample gets its name here
            except Exception as e:  # noqa: BLE001 - a create error is the sample's failure
                if getattr(e, "status", None) != 409:
                    return False, f"creating {o['kind']} {o['metadata'].get('name')}: {str(e).splitlines()[0][:300]}", 0
        ray_objs = [o for o in objs if o["kind"] in RAY_KINDS]
        while True:
            results = [reached(api, ns, o) for o in ray_objs]
            if all(r[0] for r in results):
                return True, "", time.monotonic() - t0
            statuses = [f"{o['kind']} {o['metadata']['name']}: {r[2]}" for o, r in zip(ray_objs, results)]
            stuck = _never_fits(core, ns) or _selects_a_cluster_never_made(core, ns, objs) or \
                ((_no_scheduler(core, ns) or _pull_failure(core, ns)) if time.monotonic() - t0 > 60 else None)
            if any(r[1] for r in results) or stuck or time.monotonic() - t0 > timeout:
                why = "failed" if any(r[1] for r in results) else stuck or f"not reached in {timeout:.0f}s"
                return False, f"{why}: " + cause(api, ns, statuses), time.monotonic() - t0
            time.sleep(3)
    finally:
        teardown(api, dyn, ns, objs)


RAY_GONE_SECONDS = 180.0


def teardown(api, dyn, ns: str, objs: list[dict]) -> None:
    """As a user would: the Ray resources first, while what they use (e.g. Redis) still runs, so the operator's
    finalizers (the GCS fault-tolerance Redis cleanup Job, which cannot be created in a namespace being
    deleted) can finish; then the namespace and the sample's cluster-scoped objects. Finalizers the operator
    still holds after RAY_GONE_SECONDS are removed, with a line saying so."""
    co = client.CustomObjectsApi(api)
    ray = [o for o in objs if o["kind"] in RAY_KINDS and o["metadata"].get("name")]  # created ones

    def unless_gone(verb: str, o: dict, *body):
        try:
            return _ray_call(co, verb, ns, o, *body)
        except client.ApiException as e:
            if e.status != 404:
                raise
            return None

    def left() -> list[dict]:
        return [got for o in ray if (got := unless_gone("get", o)) is not None]

    for o in ray:
        unless_gone("delete", o)
    deadline = time.monotonic() + RAY_GONE_SECONDS
    while (held := left()) and time.monotonic() < deadline:
        time.sleep(2)
    for o in held:
        meta = o["metadata"]
        print(f"  note: {o['kind']} {ns}/{meta['name']} still held {meta.get('finalizers')} after "
              f"{RAY_GONE_SECONDS:.0f}s; finalizers removed", flush=True)
        unless_gone("patch", o, {"metadata": {"finalizers": None}})
    for o in objs:  # cluster-scoped objects of the sample (e.g. ClusterRoles) go too
        try:
            res = dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
            if not res.namespaced:
                res.delete(name=o["metadata"]["name"])
        except Exception:  # noqa: BLE001
            pass
    namespaces.delete(client.CoreV1Api(api), ns, 300)


RAY_RELEASE_IMAGE = re.compile(r"^rayproject/ray:(\d+\.\d+\.\d+)$")


def named_images(objs: list[dict]) -> set[str]:
    """Every `image:` value in the objects."""
    found: set[str] = set()

    def walk(x) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "image" and isinstance(v, str):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for o in objs:
        walk(o)
    return found


def images_to_load(images: set[str]) -> tuple[list[str], list[str]]:
    """(images with an offline archive, after building the missing Ray release images; images left out)."""
    from rayconformance.clusters.kind import image_archives

    missing = sorted(m.group(1) for i in images if (m := RAY_RELEASE_IMAGE.match(i)) and i not in image_archives())
    if missing:
        print(f"building Ray images {' '.join(missing)} offline (clusters/kind/build-app-images.sh ray)", flush=True)
        root = Path(__file__).resolve().parents[1]
        subprocess.run(["bash", str(root / "clusters/kind/build-app-images.sh"), "ray"], check=True,
                       env={**os.environ, "RAY_IMAGE_VERSIONS": " ".join(missing)})
    archives = image_archives()
    return sorted(i for i in images if i in archives), sorted(i for i in images if i not in archives)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--provider", default="local")
    ap.add_argument("--cluster")
    ap.add_argument("--operator-profile", default="kuberay-v1.6.1")
    ap.add_argument("--only", nargs="*", default=[], help="samples whose file name contains one of these")
    ap.add_argument("--timeout", type=float, default=720,
                    help="seconds per sample (the longest, ray-job.kueue-toy-sample, runs its job for 600 s)")
    ap.add_argument("--jobs", type=int, default=3, help="samples run at once")
    ap.add_argument("--list", action="store_true", help="only print which samples would run or be skipped")
    a = ap.parse_args(argv)
    profile = profiles.load(a.operator_profile)
    version = profile.implementation["version"]
    sdir = samples_dir(version)
    plan = []
    for path in sorted(sdir.glob("*.yaml")):
        if a.only and not any(s in path.name for s in a.only):
            continue
        skip, objs = classify(path)
        plan.append((path, skip, objs))
    print(f"KubeRay {version} samples from {sdir}: {len(plan)} files")
    for path, skip, _ in plan:
        if skip:
            print(f"  skip {path.name}: {skip}")
    todo = [(p, o) for p, s, o in plan if not s]
    if a.list:
        for p, _ in todo:
            print(f"  run  {p.name}")
        return 0
    os.environ.setdefault("RAYCONF_LOCK_WAIT", "3600")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated run still takes the cluster down
    run_dir = Path(tempfile.mkdtemp(prefix="rc-samples-"))
    cluster_name = a.cluster or (KIND_CLUSTER if a.provider == "kind" else None)
    provider = providers.make_provider(a.provider, cluster_name, run_dir)
    load, left_out = [], []
    if provider.name == "kind":  # the local bed maps images to host runtimes itself (Ray from PyPI on first use)
        load, left_out = images_to_load(set().union(*(named_images(o) for _, o in todo)))
    cluster = provider.up()
    print(f"cluster {cluster.name} up in {cluster.bringup_seconds:.1f}s", flush=True)
    results = []
    skipped = len(plan) - len(todo)
    try:
        if load:
            provider.load_images(load)
            print(f"images loaded: {', '.join(load)}; left out (no offline build): {', '.join(left_out) or 'none'}",
                  flush=True)
        installer.install(profile, cluster, run_dir, provider)
        api = kube.api_client(cluster.kubeconfig)
        from kubernetes import dynamic
        dyn = dynamic.DynamicClient(api)
        runnable = []
        for path, objs in todo:
            if (kind := unserved(dyn, objs)):
                print(f"  skip {path.name}: needs {kind}, which this cluster does not serve (not installed)")
            else:
                runnable.append((path, objs))
        skipped += len(todo) - len(runnable)
        todo = runnable
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs))
        try:
            runs = {pool.submit(run_sample, api, path, objs, a.timeout): path for path, objs in todo}
            for done in concurrent.futures.as_completed(runs):
                path = runs[done]
                try:
                    ok, why, secs = done.result()
                except Exception as e:  # noqa: BLE001 - one sample's teardown error is reported, the rest run on
                    ok, why, secs = False, f"bench error: {str(e).splitlines()[0][:300]}", 0.0
                results.append((path.name, ok, why))
                print(f"  {'REACHED' if ok else 'FAILED '} {path.name} ({secs:.0f}s)"
                      f"{'' if ok else chr(10) + '      ' + why}", flush=True)
        finally:  # on an interrupt the queued samples are dropped; the running ones end (teardown included)
            pool.shutdown(wait=True, cancel_futures=True)
        installer.uninstall(profile, cluster, run_dir)
    finally:
        provider.down()
        shutil.rmtree(run_dir, ignore_errors=True)
    n_ok = sum(1 for _, ok, _ in results if ok)
    print(f"reached/attempted: {n_ok}/{len(results)} (skipped {skipped})")
    return 0 if n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
