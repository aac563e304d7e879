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
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client

from rayconformance import providers
from rayconformance.testing.kuberay_samples import (RAY_KINDS, SamplesNotFound, apply, classify,
                                                     remove_ray_resources, samples_dir, unserved)
from rayconformance.kube import client as kube, namespaces
from rayconformance.operator import installer, profiles

sys.path.insert(0, str(Path(__file__).resolve().parent))
from upstream.goals import RUN_ID, cause, never_reaches, reached  # noqa: E402
from upstream.plan import images_to_load, named_images  # noqa: E402

KIND_CLUSTER = "kind-cpu-open"  # on a 2-core machine kind-cpu's one worker leaves no room for most samples


def run_sample(api, path: Path, objs: list[dict], timeout: float) -> tuple[bool, str, float]:
    from kubernetes import dynamic
    core = client.CoreV1Api(api)
    ns = namespaces.create(core, "sample-" + re.sub(r"[^a-z0-9]+", "-", path.stem.lower())[:30], RUN_ID)
    dyn = dynamic.DynamicClient(api)
    t0 = time.monotonic()
    made = objs  # what teardown takes away: the objects as created, once they are
    try:
        try:
            objs = made = apply(api, ns, path, objs)
        except client.ApiException as e:  # a create error is the sample's failure
            return False, f"creating the sample's objects: {str(e).splitlines()[0][:300]}", 0
        ray_objs = [o for o in objs if o["kind"] in RAY_KINDS]
        while True:
            results = [reached(api, ns, o) for o in ray_objs]
            if all(r[0] for r in results):
                return True, "", time.monotonic() - t0
            statuses = [f"{o['kind']} {o['metadata']['name']}: {r[2]}" for o, r in zip(ray_objs, results)]
            stuck = never_reaches(core, ns, objs, time.monotonic() - t0)
            if any(r[1] for r in results) or stuck or time.monotonic() - t0 > timeout:
                why = "failed" if any(r[1] for r in results) else stuck or f"not reached in {timeout:.0f}s"
                return False, f"{why}: " + cause(api, ns, statuses), time.monotonic() - t0
            time.sleep(3)
    finally:
        teardown(api, dyn, ns, made)


RAY_GONE_SECONDS = 180.0


def teardown(api, dyn, ns: str, objs: list[dict]) -> None:
    """The Ray resources first (`remove_ray_resources`: finalizers still held after RAY_GONE_SECONDS are removed,
    with a line saying so), then the namespace and the sample's cluster-scoped objects."""
    for line in remove_ray_resources(api, ns, objs, RAY_GONE_SECONDS):
        print(f"  note: {line}", flush=True)
    for o in objs:  # cluster-scoped objects of the sample (e.g. ClusterRoles) go too
        try:
            res = dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
            if not res.namespaced:
                res.delete(name=o["metadata"]["name"])
        except Exception:  # noqa: BLE001
            pass
    namespaces.delete(client.CoreV1Api(api), ns, 300)


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
    try:
        sdir = samples_dir(version)
    except SamplesNotFound as e:
        raise SystemExit(f"bench: {e}") from None
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
