"""The `existing` provider: the cluster of the current kubeconfig context ($KUBECONFIG or ~/.kube/config),
used as is. It is never created or deleted; only its reachability is checked. It takes no cluster definition
and has no capabilities beyond that: tests that need one skip, saying so."""
from __future__ import annotations

import os
from pathlib import Path

from . import Cluster, Provider, ProviderError

REACH_TIMEOUT_SECONDS = 10


def kubeconfig_path() -> Path:
    paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if len(paths) > 1:
        raise ProviderError("provider existing: KUBECONFIG lists several files; point it at one "
                            "(e.g. `kubectl config view --flatten > one.yaml`)")
    path = Path(paths[0] if paths else "~/.kube/config").expanduser()
    if not path.is_file():
        raise ProviderError(f"provider existing: kubeconfig {path} not found; set KUBECONFIG or use another --provider")
    return path


class ExistingProvider(Provider):
    name = "existing"
    default_cluster = None

    def up(self) -> Cluster:
        from kubernetes import client, config

        from rayconformance.kube import client as kube

        path = kubeconfig_path()
        try:
            _, context = config.list_kube_config_contexts(config_file=str(path))
            api = kube.api_client(path, retries=0)
        except Exception as e:  # noqa: BLE001 - any unusable kubeconfig gets the same one-line answer
            raise ProviderError(f"provider existing: kubeconfig {path} is not usable: {' '.join(str(e).split())}") from None
        try:
            client.VersionApi(api).get_code(_request_timeout=REACH_TIMEOUT_SECONDS)
        except Exception as e:  # noqa: BLE001
            reason = " ".join(str(getattr(e, "reason", None) or e).split())[-200:]  # urllib3 wraps the cause
            raise ProviderError(f"provider existing: cannot reach {api.configuration.host} (context "
                                f"'{context['name']}' of {path}): {reason}; check the cluster is up "
                                f"(kubectl cluster-info)") from None
        finally:
            api.close()
        self.cluster = Cluster(provider=self.name, name=context["name"], kubeconfig=path)
        return self.cluster

    def down(self) -> None:
        pass  # not ours to delete


PROVIDER = ExistingProvider
