"""The release swap (`release_swap.ReleaseSwap`) of an operator the session installed with Helm, done as a Helm user
does it: the earlier release goes in with its own chart (the session's source tree's repository at the earlier
release's tag, `source_tree.chart_at`) as the same Helm release, `helm upgrade --install` with its image and feature
gates (a downgrade in place), and the session's chart and values come back with `helm upgrade --install`. The CRDs
go as the session's install applies them: with `crds: apply` the suite replaces the chart's crds/ before Helm runs.

The kustomize path replaces the Deployment with another release's manifests, which the API server refuses when
the chart's selector labels differ from kustomize's (a Deployment's selector is immutable); this path never mixes
the two.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rayconformance.kube.objects import replace_all

from . import OperatorError, helm, operator_errors, source_tree
from .install_section import HelmChart, InstallSection, built_image

CHARTS_DIR = "operator-charts"  # in the run directory: earlier releases' charts, one directory per commit
# the values the suite sets from a release's own profile, dropped from the session's `helm.values` for another release
RELEASE_VALUES = ("featureGates", "env")
RELEASE_IMAGE_VALUES = ("repository", "tag")


@dataclass(frozen=True)
class HelmSession:
    """The session's Helm install, as `helm.install_release` recorded it in the run directory, and the source tree
    (--operator-tree) its chart came from."""
    plan: helm.HelmPlan
    kubeconfig: str
    run_dir: Path
    tree: Path | None

    @property
    def home(self) -> Path:
        return self.run_dir / "helm-home"


def session_release(run_dir: Path, tree: str | None = None) -> HelmSession | None:
    """The session's Helm install read back from the run directory, or None when it made none."""
    path = Path(run_dir) / helm.RECORD_FILE
    if not path.is_file():
        return None
    rec = yaml.safe_load(path.read_text())
    return HelmSession(plan=helm.HelmPlan(**rec["plan"]), kubeconfig=str(rec["kubeconfig"]), run_dir=Path(run_dir),
                       tree=source_tree.tree_path(tree))


def earlier_ref(previous, provider: str) -> str:
    """The git ref of the earlier release: its install source's `ref` or `version`, else its implementation's
    `version`."""
    spec = previous.install.get(provider)
    src = spec.source if spec is not None else None
    ref = (src and (src.ref or src.version)) or (previous.implementation or {}).get("version")
    if not ref:
        raise OperatorError(f"profile {previous.name} names no version (implementation.version or "
                            f"install.{provider}.source.version), so its chart cannot be found in the operator tree")
    return str(ref)


def session_values(session_spec: InstallSection) -> dict:
    """The session's own `helm.values` that also hold for another release: all but the image's repository and tag,
    the feature gates and env (the suite sets those from the other release's profile)."""
    values = {k: v for k, v in (session_spec.helm.values if session_spec.helm else {}).items()
              if k not in RELEASE_VALUES}
    if isinstance(values.get("image"), dict):
        values["image"] = {k: v for k, v in values["image"].items() if k not in RELEASE_IMAGE_VALUES}
    return values


def earlier_plan(session: HelmSession, session_spec: InstallSection, previous, provider: str) -> helm.HelmPlan:
    """The Helm install of the earlier release `previous` (a profile) over the session's release: its own chart at
    its tag, extracted under the run directory; the session's release name, namespace, CRD mode and
    `session_values`; the earlier profile's image, env and feature gates over its chart's own feature-gate list."""
    p, chart = session.plan, session_spec.helm.chart if session_spec.helm else None
    if p.repository or not isinstance(chart, str) or Path(chart).is_absolute():
        raise OperatorError(f"the session's operator chart is not a directory of a source tree, so the chart of the "
                            f"earlier release {previous.name} cannot be taken from the same repository at its tag")
    if session.tree is None:
        raise OperatorError(f"the chart of the earlier release {previous.name} comes from the session's source "
                            f"tree and none was given: pass {source_tree.OPTION} PATH (or set {source_tree.ENV})")
    with operator_errors():
        chart_dir = source_tree.chart_at(session.tree, earlier_ref(previous, provider), chart,
                                         session.run_dir / CHARTS_DIR, release=previous.name)
    own = previous.install[provider]
    spec = InstallSection(helm=HelmChart(chart=str(chart_dir), release=p.release, crds=p.crds,
                                         values=session_values(session_spec)),
                          namespace=p.namespace, env=own.env, args=own.args,
                          image=built_image(own, own.image, previous.path.parent, provider))
    if spec.args:
        raise OperatorError(f"profile {previous.name} install.{provider}.args cannot be passed through a chart; "
                            f"set the chart's values in the session's install.{provider}.helm.values")
    with operator_errors():
        return helm.plan(spec, dict(previous.feature_gates), chart_dir, where=f"profile {previous.name} "
                         f"install.{provider} (as a Helm release)")


def downgrade(session: HelmSession, earlier: helm.HelmPlan, values_name: str, api, load_images, created: list[dict],
              scale: float = 1.0) -> list[dict]:
    """Put the earlier release in place of the session's: its chart rendered (`helm template`) and its images
    prepared by `load_images`, its CRDs replacing the session's (`crds: apply`; those it creates are appended to
    `created`), then `helm upgrade --install` of the session's release with its chart. Returns the rendered
    objects (to wait for the Deployment and observe it). Does not wait."""
    values = helm.write_values(earlier, session.run_dir / values_name)
    with operator_errors():
        binary = helm.helm_binary()
        objects = helm.render(binary, earlier, values, session.home)
        if load_images is not None:
            load_images(objects)
        _install(binary, session, earlier, values, api, created, scale)
    return objects


def upgrade_back(session: HelmSession, api, scale: float = 1.0) -> None:
    """Upgrade the release back to the session's chart and values as the session installed it: its CRDs first
    (`crds: apply`), then `helm upgrade --install`. Does not wait."""
    values = helm.write_values(session.plan, session.run_dir / helm.VALUES_FILE)
    with operator_errors():
        _install(helm.helm_binary(), session, session.plan, values, api, [], scale)


def _install(binary, session: HelmSession, p: helm.HelmPlan, values: Path, api, created: list[dict],
             scale: float) -> None:
    if p.crds == "apply":
        replace_all(helm.chart_crds(p), api, scale, created=created)
    helm.run(helm.install_command(binary, p, session.kubeconfig, values), session.home,
             timeout=helm.DEFAULT_TIMEOUT * scale)
