"""What only the RayService tests do: deploy the greeter RayService (samples/rayservice-greeter.yaml, or a variant
of it that uses the greeter's application ConfigMap), change its reply, move its replica, and signal processes
inside a head's Ray container (through a Ray job on that head)."""
from __future__ import annotations

import yaml

from rayconformance.testing.context import Context
from rayconformance.testing.handles.rayservice import RayService
from rayconformance.testing.programs import program

GREETER = "rayservice-greeter"


def greeter(ctx: Context, variant: str | None = None) -> list[dict]:
    """The greeter's documents: its application ConfigMap with its own RayService, or with the one of the sample
    `variant` (e.g. rayservice-greeter-ft)."""
    docs = ctx.samples(GREETER)
    if variant is None:
        return docs
    return [d for d in docs if d["kind"] == "ConfigMap"] + ctx.samples(variant)


def deploy(ctx: Context, docs: list[dict] | None = None) -> tuple[RayService, dict]:
    """Create the greeter (or `docs`) and wait until its RayService is Ready=True and serves from an active
    RayCluster with no pending one; its handle and the ready RayService."""
    __tracebackhide__ = True
    docs = docs if docs is not None else greeter(ctx)
    ctx.create(docs)
    service = ctx.rayservice(next(d for d in docs if d["kind"] == "RayService")["metadata"]["name"])
    return service, service.must_be_ready()


def with_reply(obj: dict, message: str) -> str:
    """The RayService's serveConfigV2 with the greeter replying `message` (its user_config), as YAML."""
    cfg = yaml.safe_load(obj["spec"]["serveConfigV2"])
    cfg["applications"][0]["deployments"][0]["user_config"]["message"] = message
    return yaml.safe_dump(cfg)


ON_THE_WORKER = {"num_cpus": 0.1}  # the head has no CPUs
ON_THE_HEAD = {"num_cpus": 0, "resources": {"node:__internal_head__": 0.001}}  # Ray's own head-node resource


def place_replica(service: RayService, obj: dict, actor_options: dict) -> dict:
    """Patch serveConfigV2 in place: the Greeter replica with `actor_options` (where Ray may place it)."""
    cfg = yaml.safe_load(obj["spec"]["serveConfigV2"])
    cfg["applications"][0]["deployments"][0]["ray_actor_options"] = actor_options
    return service.patch({"spec": {"serveConfigV2": yaml.safe_dump(cfg)}})


def signal_processes(name: str, sig: str, *, for_s: int = 0) -> str:
    """Python code for a Ray job on a head (`RayCluster.submit_ray_job`): it sends `sig` (e.g. SIGKILL, SIGSTOP) to
    every process of the head's Ray container named `name`: its program (gcs_server) or the title Ray gives a worker
    process (ray::ProxyActor). With `for_s`, it goes on doing so every half second for that long, so a process Ray
    starts again meanwhile gets the signal too (samples/programs/signal_processes.py)."""
    return program("signal_processes", name=name, sig=sig, for_s=for_s)
