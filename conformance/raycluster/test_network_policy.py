"""Network isolation of a RayCluster (spec.networkPolicy: KubeRay 1.7, alpha, its RayClusterNetworkPolicy gate on):
the NetworkPolicies the operator makes from it, as a network plugin would read them, following changes of the mode
and the removal of the block. Whether traffic is then blocked is the network plugin's part: the local bed has none
that enforces NetworkPolicy, so no test here sends traffic a policy should stop."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.network_policy import network_policies_must_be, network_policies_must_be_gone

SAMPLE = "raycluster-network-policy"
HEAD = ("head", None)


@pytest.mark.feature("RayClusterNetworkPolicy")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.networkPolicy")
def test_network_policies_follow_the_spec(ctx):
    """With spec.networkPolicy and no mode (DenyAll), the operator makes one NetworkPolicy for the head and one per
    worker group, owned by the RayCluster, each selecting that group's Pods, restricting ingress and egress, allowing
    every port to and from the cluster's own Pods, and carrying the spec's rules: the head's on the head's policy, the
    workers' on group small's, and group special's own on its policy instead of the workers'. Changed to
    DenyAllEgress, every policy restricts egress only (no ingress rules left); with networkPolicy removed from the
    spec, the policies are deleted."""
    body = ctx.sample(SAMPLE)
    rules = body["spec"]["networkPolicy"]
    special = next(g for g in rules["workerGroups"] if g["groupName"] == "special")
    cluster = ctx.create_raycluster(body)

    expected = {HEAD: {"given": rules["head"]},
                ("worker", "small"): {"given": rules["worker"], "absent": special},
                ("worker", "special"): {"given": special, "absent": rules["worker"]}}
    network_policies_must_be(ctx.k8s, ctx.namespace, cluster.name, "DenyAll", expected, ctx.timeouts.short,
                             what="spec.networkPolicy without a mode (KubeRay's default DenyAll)")
    cluster.must_be_provisioned()  # the operator's own view of the cluster is unaffected (nothing enforces here)

    cluster.patch({"spec": {"networkPolicy": {"mode": "DenyAllEgress"}}})
    network_policies_must_be(ctx.k8s, ctx.namespace, cluster.name, "DenyAllEgress", expected, ctx.timeouts.short,
                             what="networkPolicy.mode changed to DenyAllEgress on the running cluster")

    cluster.patch({"spec": {"networkPolicy": None}})
    network_policies_must_be_gone(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.short,
                                  what="networkPolicy removed from the spec")
