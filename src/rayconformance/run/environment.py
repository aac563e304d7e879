"""The run's environment: one cluster and one operator, shared by every test (and every xdist worker).

Only the controller process (the only process of a run without xdist) brings it up, once, and only when a
test that will run needs it; then it writes `<run dir>/environment.json`, which the session fixtures of any
process read. At the end of the session the controller sweeps the run's namespaces, uninstalls the operator
and takes the cluster down, unless resources are kept.
"""
from __future__ import annotations

import importlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rayconformance.clusters.definition import ClusterDefinition
from rayconformance.clusters.progress import Step
from rayconformance.errors import one_line
from rayconformance.operator.profiles import Profile
from rayconformance.providers import Cluster, ProviderError, build

from . import signals
from .options import Options

ENV_FILE = "environment.json"


@dataclass
class Environment:
    cluster: Cluster | None = None
    facts: dict = field(default_factory=dict)  # observed: kubernetesVersion, nodes, gpus
    operator: dict | None = None  # what operator.installer.install observed, plus installSeconds

    def save(self, run_dir: Path) -> None:
        """The cluster travels with its resolved definition as a value: no process reads the definition again."""
        data = asdict(self)
        if self.cluster:
            defn = self.cluster.definition
            data["cluster"] |= {"kubeconfig": str(self.cluster.kubeconfig),
                                "definition": defn.to_dict() if defn else None}
        tmp = run_dir / f".{ENV_FILE}.tmp"
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(run_dir / ENV_FILE)

    @classmethod
    def load(cls, run_dir: Path) -> "Environment":
        path = run_dir / ENV_FILE
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text())
        cluster = None
        if data["cluster"]:
            defn = data["cluster"]["definition"]
            cluster = Cluster(**{**data["cluster"], "kubeconfig": Path(data["cluster"]["kubeconfig"]),
                                 "definition": ClusterDefinition.from_dict(defn) if defn else None})
        return cls(cluster=cluster, facts=data["facts"], operator=data["operator"])


@dataclass(frozen=True)
class Operator:
    """What the `operator` fixture gives a test: the profile it was installed from, and what was observed."""
    profile: Profile
    observed: dict

    def location(self) -> tuple[str, str] | None:
        """(namespace, Deployment name) of the operator: as observed after install, else the profile's readiness."""
        if self.observed.get("namespace") and self.observed.get("deployment"):
            return self.observed["namespace"], self.observed["deployment"]
        r = self.profile.readiness
        return (r.namespace, r.deployment) if r else None


class BringUpError(RuntimeError):
    """The cluster or the operator could not be brought up; the message is one line."""


class Session:
    """The controller's handle on the environment: brings it up on demand, tears it down at the end."""

    def __init__(self, options: Options, estimates: dict[str, float] | None = None):
        self.options = options
        self.estimates = estimates or {}  # seconds an earlier run took: "bringup", "install" (progress.py)
        self.env = Environment()
        self.provider = None
        self.installing = False  # set before install, so a failed install is still uninstalled
        self.warnings: list[str] = []
        self.prepared: set[str] = set()  # samples whose images are ready
        self.images_ready: set[str] = set()  # images loaded or made for this run

    def _make_provider(self):
        factory = build
        if self.options.provider_factory:
            module, _, attr = self.options.provider_factory.partition(":")
            factory = getattr(importlib.import_module(module), attr)
        return factory(self.options.provider, self.options.definition, self.options.run_dir,
                       keep=self.options.keep_resources, timeout_scale=self.options.timeout_scale)

    def bring_up(self, need_operator: bool, samples: list[str] = (), earlier_operators: bool = False) -> None:
        """Bring up the cluster, and install the operator if needed, unless already done; make the images of the
        `samples` ready and, with `earlier_operators`, those of the releases the profile is upgraded from. Provider
        and operator errors become a BringUpError (one line); anything else is a bug and propagates as is."""
        from rayconformance.operator import OperatorError
        from rayconformance.operator.profiles import ProfileError

        try:
            self._bring_up(need_operator)
            self._prepare_samples(samples)
            if earlier_operators:
                self._prepare_images(self._earlier_operator_images())
        except ProviderError as e:
            raise BringUpError(f"could not bring up the cluster: {one_line(e)}") from None
        except OperatorError as e:
            raise BringUpError(f"could not install the operator of profile {self.options.profile.name}: "
                               f"{one_line(e)}") from None
        except ProfileError as e:
            raise BringUpError(f"operatorUpgradeFrom of profile {self.options.profile.name}: {one_line(e)}") from None

    def _bring_up(self, need_operator: bool) -> None:
        from rayconformance.kube import client as kube
        from rayconformance.operator import installer

        opts = self.options
        if self.env.cluster is None:
            provider, started = self._make_provider(), time.monotonic()
            # a provider whose up() fails cleans up after itself; an adopted cluster is never taken down
            with Step(f"bringing up the cluster ({opts.provider}, {opts.cluster_name})", self.estimates.get("bringup")):
                cluster = provider.adopt(opts.attach_kubeconfig) if opts.attach_kubeconfig else provider.up()
            self.provider = provider  # only a provider that came up is taken down
            if opts.ray_version:  # the samples' Ray image, at the run's version
                with Step(f"preparing the Ray image rayproject/ray:{opts.ray_version}"):
                    self._prepare_images([f"rayproject/ray:{opts.ray_version}"])
            cluster.bringup_seconds = cluster.bringup_seconds or round(time.monotonic() - started, 1)
            self.env.cluster = cluster
            try:
                self.env.facts = kube.describe_cluster(kube.api_client(cluster.kubeconfig, retries=0))
            except Exception as e:  # noqa: BLE001 - the facts are for the report; tests will show real trouble
                self.warnings.append(f"could not read the cluster's version and nodes: {one_line(e)}")
            self.env.save(opts.run_dir)
        if need_operator and self.env.operator is None:
            if self.env.cluster.provider not in opts.profile.install:
                self.env.operator = {}  # nothing to install on this provider (e.g. already running)
            else:
                started, self.installing = time.monotonic(), True
                with Step(f"installing the operator ({opts.profile.name})", self.estimates.get("install")):
                    observed = installer.install(opts.profile, self.env.cluster, opts.run_dir, self.provider,
                                                 opts.timeout_scale, opts.operator_tree, opts.operator_tree_key)
                self.env.operator = {**observed, "installSeconds": round(time.monotonic() - started, 1)}
            self.env.save(opts.run_dir)

    def _prepare_samples(self, samples: list[str]) -> None:
        """The images of the samples the selected tests declare, at the run's Ray version, made ready before the
        first test (a provider that pulls or builds them on first use would otherwise do it inside a test)."""
        from rayconformance.testing import ray
        from rayconformance.providers import images_of

        new = [s for s in samples if s not in self.prepared]
        if not new:
            return
        with Step(f"preparing the images of {len(new)} sample(s)"):
            self._prepare_images(images_of([d for s in new for d in ray.load_sample(s, self.options.ray_version)]))
        self.prepared.update(new)

    def _earlier_operator_images(self) -> list[str]:
        """The operator image of each release the profile is upgraded from (operatorUpgradeFrom), on this provider:
        a test swaps it in (conformance/rayservice/conftest.py), and it is built or loaded before the first test."""
        from rayconformance.operator import profiles
        from rayconformance.operator.install_section import built_image

        profile, out = self.options.profile, []
        provider = self.env.cluster.provider if self.env.cluster else None
        for name in profile.upgrade_from:
            earlier = profiles.load(str(profiles.upgrade_source(profile.path, name)))
            if (spec := earlier.install.get(provider)) is not None and spec.image:
                out.append(built_image(spec, spec.image, earlier.path.parent, provider))
        return out

    def _prepare_images(self, images: list[str]) -> None:
        """Each image once per run: loaded into the nodes or made (rayconformance.providers), where the provider
        does."""
        new = [i for i in images if i not in self.images_ready]
        if new and hasattr(self.provider, "prepare_images"):
            self.provider.prepare_images([{"kind": "Pod", "spec": {"containers": [
                {"name": f"c{k}", "image": image} for k, image in enumerate(new)]}}])
        self.images_ready.update(new)

    def tear_down(self, timeout: float) -> None:
        """Sweep the run's namespaces, uninstall the operator, take the cluster down; problems become warnings.
        Ctrl-C during the sweep or the uninstall skips the rest of them; taking the cluster down ignores Ctrl-C."""
        from rayconformance.testing import gateway
        from rayconformance.kube import client as kube, namespaces
        from rayconformance.operator import installer

        opts, cluster = self.options, self.env.cluster
        steps = []

        def sweep() -> None:
            released = namespaces.sweep_releasing(kube.api_client(cluster.kubeconfig), opts.run_id, timeout)
            if released:
                self.warnings.append("namespace sweep: removed finalizers the operator had not removed: "
                                     + "; ".join(released))
        if cluster is not None:
            steps.append(("namespace sweep", sweep))
        if cluster is not None and (opts.run_dir / gateway.INSTALLED_MARKER).exists():
            steps.append(("Gateway implementation removal",
                          lambda: gateway.uninstall(kube.api_client(cluster.kubeconfig))))
        if self.installing:
            steps.append(("operator uninstall", lambda: installer.uninstall(opts.profile, cluster, opts.run_dir,
                                                                             opts.timeout_scale)))
        for what, step in steps:
            try:
                step()
            except KeyboardInterrupt:
                self.warnings.append(f"{what} interrupted: skipped the rest of the clean-up before the cluster goes")
                break
            except Exception as e:  # noqa: BLE001
                self.warnings.append(f"{what}: {one_line(e)}")
        if self.provider is not None:
            with signals.deferred():
                try:
                    self.provider.down()
                except Exception as e:  # noqa: BLE001
                    self.warnings.append(f"provider {opts.provider} down: {one_line(e)}")

