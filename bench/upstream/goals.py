"""Whether a sample's Ray resources reached their goal, why they did not (status, Pods not ready, Warning events),
and whether the sample can never get there (a Pod no node has room for, an image that cannot be pulled, a
scheduler the cluster does not run, a RayJob selecting a RayCluster the sample does not create)."""
from __future__ import annotations

from kubernetes import client

from rayconformance.testing.kuberay_samples import ray_call
from rayconformance.kube import namespaces

RUN_ID = "bench"  # the run label of the samples' namespaces


def _status(api, ns: str, obj: dict) -> dict:
    try:
        return ray_call(client.CustomObjectsApi(api), "get", ns, obj).get("status") or {}
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


PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


def _pull_failure(core, ns: str) -> str | None:
    """A container whose image cannot be pulled (on a node with no registry this does not heal)."""
    for p in core.list_namespaced_pod(ns).items:
        for cs in (p.status.init_container_statuses or []) + (p.status.container_statuses or []):
            if cs.state.waiting and cs.state.waiting.reason in PULL_ERRORS:
                return f"Pod {p.metadata.name} cannot pull {cs.image} ({cs.state.waiting.reason})"
    return None


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


PATIENCE_SECONDS = 60.0  # before a pull failure or a missing scheduler ends a sample: either may still heal


def never_reaches(core, ns: str, objs: list[dict], elapsed: float) -> str | None:
    """Why the sample (`objs`, in namespace `ns`, started `elapsed` seconds ago) can never reach its goal, or None."""
    return _never_fits(core, ns) or _selects_a_cluster_never_made(core, ns, objs) or \
        ((_no_scheduler(core, ns) or _pull_failure(core, ns)) if elapsed > PATIENCE_SECONDS else None)
