"""A `local` provider for a test bed that is already up (the deliberate-break harness's), passed to the suite
with the test-only `--provider-factory`: the suite runs as on `local` (operator from `install.local`,
the provider's capabilities such as cutting a Pod's network) but neither brings the bed up nor takes it down.
The bed's kubeconfig comes from $RAYCONF_ATTACH_KUBECONFIG."""
from __future__ import annotations

import os
from pathlib import Path

from rayconformance.fixtures.providers import Cluster, make_provider
from rayconformance.fixtures.providers.local import LocalProvider

KUBECONFIG_ENV = "RAYCONF_ATTACH_KUBECONFIG"


class AttachedBed(LocalProvider):
    def up(self) -> Cluster:
        self.cluster = Cluster(provider=self.name, name=self.definition.name,
                               kubeconfig=Path(os.environ[KUBECONFIG_ENV]), gpu=self.definition.has_gpus,
                               definition=str(self.definition.path), extra={"attached": True})
        return self.cluster

    def down(self) -> None:
        pass  # the harness owns the bed


def attached_bed(name, cluster_definition, run_dir, keep=False, **kw) -> AttachedBed:
    provider = make_provider(name, cluster_definition, run_dir, keep, **kw)
    return AttachedBed(provider.definition, run_dir, keep, **kw)
