"""What only the RayService tests do: deploy the greeter RayService (samples/rayservice-greeter.yaml, or a variant
of it that uses the greeter's application ConfigMap)."""
from __future__ import annotations

from rayconformance.fixtures.context import Context
from rayconformance.fixtures.handles.rayservice import RayService

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
