"""The autoscaler sidecar as autoscalerOptions shape it: its env, envFrom, volume mounts, securityContext, resources,
image pull policy and image (every KubeRay since 1.4), its command and args (KubeRay 1.7), each on the container
running Ray's autoscaler and not on the Ray container, and seen from inside its process where it can be."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.raycluster_sidecars import (APPENDED, WHOLE, autoscaler_sidecar_must_carry,
                                                                   container_log_must_show,
                                                                   ray_container_must_not_carry)
from rayconformance.testing.waiting import wait_until

SAMPLE = "raycluster-autoscaler-sidecar"
# a line Ray's autoscaler logs at DEBUG (ray_constants.LOGGER_FORMAT: time, tab, level, file:line --)
DEBUG_LINE = r"\tDEBUG \S+:\d+ -- "
# KubeRay's own settings for the sidecar when autoscalerOptions leave them out (BuildAutoscalerContainer)
DEFAULT_RESOURCES = {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}}
DEFAULT_PULL_POLICY = "IfNotPresent"
# what the sidecar's own command prints before it runs KubeRay's generated one (single-quoted nowhere: sh -c)
SHOW = ("echo rc-sidecar env=$RC_SIDECAR_ENV from=$RC_SIDECAR_FROM file=$(cat /etc/rc-sidecar/note) gid=$(id -g) "
        "shell=$0; $KUBERAY_GEN_AUTOSCALER_START_CMD")
OTHER_IMAGE = "python:3.11-slim"  # an image the suite's providers run (it has no Ray)


def _create(ctx, change=None):
    """Create the sample's ConfigMaps and its RayCluster (after `change(body)`); the handle and the body."""
    docs = ctx.samples(SAMPLE)
    ctx.create([d for d in docs if d["kind"] == "ConfigMap"])
    body = next(d for d in docs if d["kind"] == "RayCluster")
    if change:
        change(body)
    return ctx.create_raycluster(body), body


def _ray_image(body: dict) -> str:
    return body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]


def _same_image(reported: str, named: str) -> bool:
    """A node reports an image by its full reference (a registry and library/ before a short name): the same image."""
    return reported == named or reported.endswith(f"/{named}") or reported.endswith(f"/library/{named}")


@pytest.mark.feature("RayClusterAutoscalerSidecarOptions")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.autoscalerOptions.env", "RayCluster:spec.autoscalerOptions.envFrom",
                    "RayCluster:spec.autoscalerOptions.volumeMounts", "RayCluster:spec.autoscalerOptions.securityContext",
                    "RayCluster:spec.autoscalerOptions.resources", "RayCluster:spec.autoscalerOptions.imagePullPolicy",
                    "RayCluster:spec.autoscalerOptions.image")
def test_autoscaler_sidecar_takes_its_options(ctx):
    """The head Pod's container running Ray's autoscaler carries what autoscalerOptions give it: its env and envFrom
    entries, its volume mount, its securityContext, its resources and its image pull policy (Never), and runs the
    Ray container's image when no image is given; the Ray container gets none of them. The env reaches the
    autoscaler's process: with RAY_LOGGER_LEVEL debug among them, Ray's autoscaler logs DEBUG lines."""
    cluster, body = _create(ctx)
    cluster.must_be_provisioned()
    options = {k: v for k, v in body["spec"]["autoscalerOptions"].items() if k in WHOLE + APPENDED}
    pod, sidecar = autoscaler_sidecar_must_carry(ctx.k8s, ctx.namespace, cluster.name,
                                                 {**options, "image": _ray_image(body)}, ctx.timeouts.short)
    ray_container_must_not_carry(pod, options)
    container_log_must_show(ctx.k8s, ctx.namespace, pod["metadata"]["name"], sidecar["name"], DEBUG_LINE,
                            ctx.timeouts.medium,
                            what="Ray's autoscaler logging at DEBUG (RAY_LOGGER_LEVEL=debug from autoscalerOptions.env)")


@pytest.mark.feature("RayClusterAutoscalerSidecarOptions")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.autoscalerOptions.image")
def test_autoscaler_sidecar_runs_the_named_image(ctx):
    """With autoscalerOptions.image set, the head Pod's autoscaler container runs that image (as the node reports
    it), while the Ray container keeps its own."""
    def other_image(body):
        body["spec"]["autoscalerOptions"]["image"] = OTHER_IMAGE

    cluster, body = _create(ctx, other_image)
    pod, sidecar = autoscaler_sidecar_must_carry(ctx.k8s, ctx.namespace, cluster.name, {"image": OTHER_IMAGE},
                                                 ctx.timeouts.pods)
    name = pod["metadata"]["name"]

    def images():
        p = ctx.core.read_namespaced_pod(name, ctx.namespace)
        return {s.name: s.image for s in p.status.container_statuses or []}

    ray_container = pod["spec"]["containers"][0]["name"]
    seen = wait_until(images, lambda i: sidecar["name"] in i and ray_container in i,
                      f"the node to report the images of head Pod {name}'s containers", ctx.timeouts.pods)
    assert _same_image(seen[sidecar["name"]], OTHER_IMAGE) and _same_image(seen[ray_container], _ray_image(body)), \
        (f"head Pod {name}: the autoscaler container {sidecar['name']} must run autoscalerOptions.image "
         f"{OTHER_IMAGE} and the Ray container {ray_container} its own {_ray_image(body)}; the node reports {seen}")


@pytest.mark.feature("RayClusterAutoscalerCommandArgs")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.autoscalerOptions.command", "RayCluster:spec.autoscalerOptions.args",
                    "RayCluster:spec.autoscalerOptions.env", "RayCluster:spec.autoscalerOptions.envFrom",
                    "RayCluster:spec.autoscalerOptions.volumeMounts", "RayCluster:spec.autoscalerOptions.securityContext",
                    "RayCluster:spec.autoscalerOptions.resources", "RayCluster:spec.autoscalerOptions.imagePullPolicy")
def test_autoscaler_sidecar_runs_its_command_and_args(ctx):
    """autoscalerOptions.command and args replace the autoscaler container's command (KubeRay 1.7), and args can
    still run the command KubeRay generates ($KUBERAY_GEN_AUTOSCALER_START_CMD): the sidecar's process shows, in its
    log, the shell its command names, its env and envFrom values, the file of its volume mount and the group of its
    securityContext, and then Ray's autoscaler runs (its DEBUG lines). Left out, resources and imagePullPolicy are
    KubeRay's defaults (500m CPU and 512Mi requested and limited, IfNotPresent)."""
    def own_command(body):
        opts = body["spec"]["autoscalerOptions"]
        del opts["resources"], opts["imagePullPolicy"]
        opts.update(command=["/bin/sh", "-c"], args=[SHOW])

    cluster, body = _create(ctx, own_command)
    cluster.must_be_provisioned()
    opts = body["spec"]["autoscalerOptions"]
    expected = {**{k: v for k, v in opts.items() if k in WHOLE + APPENDED},
                "resources": DEFAULT_RESOURCES, "imagePullPolicy": DEFAULT_PULL_POLICY}
    pod, sidecar = autoscaler_sidecar_must_carry(ctx.k8s, ctx.namespace, cluster.name, expected, ctx.timeouts.short)
    name = pod["metadata"]["name"]

    shown = container_log_must_show(
        ctx.k8s, ctx.namespace, name, sidecar["name"], r"^rc-sidecar env=(\S*) from=(\S*) file=(\S*) gid=(\S*) "
        r"shell=(\S*)$", ctx.timeouts.short, what="the line its own command prints")
    want = ("from-autoscaler-options-env", "from-configmap-sidecar-env", "from-volume-sidecar-files",
            str(opts["securityContext"]["runAsGroup"]), "/bin/sh")
    assert shown.groups() == want, \
        (f"the autoscaler container of head Pod {name}, run as its command and args ask, must see (env, envFrom, "
         f"mounted file, group, shell) = {want}; it printed {shown.groups()}")
    container_log_must_show(ctx.k8s, ctx.namespace, name, sidecar["name"], DEBUG_LINE, ctx.timeouts.medium,
                            what="Ray's autoscaler started by $KUBERAY_GEN_AUTOSCALER_START_CMD from its args")
