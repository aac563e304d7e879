"""Installing the operator with Helm: a profile's `install.<provider>.helm` section.

    install:
      local:
        source: {name: kuberay, repository: https://github.com/ray-project/kuberay, ref: v1.7.0}
        helm:
          chart: helm-chart/kuberay-operator   # a chart directory, relative to the source tree (or the profile),
                                               # or a chart name with `repository` (a chart repository URL or an
                                               # oci:// reference) and `version`
          release: kuberay-operator            # default: the chart directory's name
          values: {}                           # the chart's values, merged last (they win)
          crds: apply                          # apply (default): the suite creates or replaces the chart's crds/
                                               # itself, then Helm skips them; helm: Helm installs them when absent
                                               # (and never upgrades them); skip: the cluster has them
        namespace: ray-system
        image: quay.io/kuberay/operator:v1.7.0
        env: {}

From the profile the suite sets the chart's values `image.repository`/`image.tag` (the install's image),
`featureGates` (a list of {name, enabled}: the chart's own list with the profile's gates over it) and `env` (a
list of {name, value}); `helm.values` go over those. A chart has no value for arbitrary container args, so a helm
install with `args` is refused: set the chart's values instead.

The section is checked when the profile loads (install_section.py). This module renders the values and the
commands (`upgrade --install`, `template`, `uninstall`) and runs them with the Helm CLI from the tool cache
(HELM_VERSION in clusters/local/versions.env, built on first use); every failure is a one-line HelmError.
"""
from __future__ import annotations

import copy
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .install_section import InstallSection

DEFAULT_TIMEOUT = 300.0


class HelmError(RuntimeError):
    """A helm install cannot be planned or run; one line for the user."""


@dataclass(frozen=True)
class HelmPlan:
    release: str
    namespace: str
    chart: str  # a chart directory (absolute) or, with `repository`, a chart name / reference
    repository: str | None = None
    version: str | None = None
    crds: str = "apply"
    values: dict = field(default_factory=dict)

    @property
    def chart_dir(self) -> Path | None:
        return None if self.repository else Path(self.chart)


def deep_merge(base: dict, over: dict) -> dict:
    """`over` merged into a copy of `base`: mappings merge key by key, anything else in `over` wins."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def chart_values(chart_dir: Path) -> dict:
    """The chart's own values.yaml ({} when it has none)."""
    p = chart_dir / "values.yaml"
    try:
        return (yaml.safe_load(p.read_text()) or {}) if p.is_file() else {}
    except yaml.YAMLError as e:
        raise HelmError(f"helm chart {chart_dir}: values.yaml is not valid YAML: {' '.join(str(e).split())}") from None


def feature_gate_values(defaults: list | None, gates: dict[str, bool]) -> list[dict]:
    """The chart's `featureGates` list ({name, enabled}) with the profile's gates over it: a gate the chart lists
    keeps its place, one it does not is appended (sorted)."""
    out = [dict(g) for g in defaults or [] if isinstance(g, dict) and "name" in g]
    named = {g["name"]: g for g in out}
    for name in sorted(gates):
        if name in named:
            named[name]["enabled"] = bool(gates[name])
        else:
            out.append({"name": name, "enabled": bool(gates[name])})
    return out


def split_image(image: str) -> tuple[str, str | None]:
    """(repository, tag) of an image reference (a digest is kept in the repository part's stead)."""
    last = image.rsplit("/", 1)[-1]
    if "@" in image or ":" not in last:
        return image, None
    repo, tag = image.rsplit(":", 1)
    return repo, tag


def plan(spec: InstallSection, feature_gates: dict[str, bool], chart_base: Path, where: str = "install") -> HelmPlan:
    """The helm install of an install section (`spec`, with its `helm` chart): the chart resolved against
    `chart_base` (the source tree's build in the tool cache, or the profile's directory), and the values."""
    h = spec.helm
    if h is None:
        raise HelmError(f"{where} names no helm chart")
    repository = h.repository
    if repository:
        # an OCI registry reference names the chart itself; a chart repository URL goes to --repo
        chart = f"{repository.rstrip('/')}/{h.chart}" if repository.startswith("oci://") else h.chart
        defaults = {}
    else:
        p = Path(h.chart)
        p = p if p.is_absolute() else Path(chart_base) / p
        if not (p / "Chart.yaml").is_file():
            raise HelmError(f"helm chart {p} not found (no Chart.yaml); check {where}.helm.chart (relative to the "
                            f"source tree) or the tree given")
        chart, defaults = str(p), chart_values(p)
    values: dict = {}
    if spec.image:
        repo, tag = split_image(spec.image)
        values["image"] = {"repository": repo, **({"tag": tag} if tag else {})}
    if feature_gates:
        values["featureGates"] = feature_gate_values(defaults.get("featureGates"), feature_gates)
    if spec.env:
        values["env"] = [{"name": k, "value": str(v)} for k, v in spec.env.items()]
    return HelmPlan(release=h.release or Path(h.chart).name, namespace=spec.namespace, chart=chart,
                    repository=repository, version=h.version, crds=h.crds, values=deep_merge(values, h.values))


def write_values(p: HelmPlan, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(p.values, sort_keys=False))
    return path


def _chart_args(p: HelmPlan) -> list[str]:
    repo = p.repository and not p.repository.startswith("oci://")
    return [p.chart] + (["--repo", p.repository] if repo else []) + (["--version", p.version] if p.version else [])


def install_command(helm: str | Path, p: HelmPlan, kubeconfig: str | Path, values_file: Path) -> list[str]:
    """`helm upgrade --install` of the plan (CRDs skipped unless `crds: helm`). No --wait: the suite waits for the
    Deployment itself (its own timeouts, --timeout-scale)."""
    cmd = [str(helm), "upgrade", "--install", p.release, *_chart_args(p), "--namespace", p.namespace,
           "--create-namespace", "--kubeconfig", str(kubeconfig), "--values", str(values_file)]
    return cmd + (["--skip-crds"] if p.crds != "helm" else [])


def template_command(helm: str | Path, p: HelmPlan, values_file: Path, kube_version: str | None = None) -> list[str]:
    """`helm template` of the plan: the objects it installs (with the chart's CRDs unless `crds: skip`), for the
    run's record and the images to load. Renders offline (no cluster)."""
    cmd = [str(helm), "template", p.release, *_chart_args(p), "--namespace", p.namespace,
           "--values", str(values_file)]
    if p.crds != "skip":
        cmd.append("--include-crds")
    return cmd + (["--kube-version", kube_version] if kube_version else [])


def uninstall_command(helm: str | Path, p: HelmPlan, kubeconfig: str | Path) -> list[str]:
    return [str(helm), "uninstall", p.release, "--namespace", p.namespace, "--kubeconfig", str(kubeconfig),
            "--ignore-not-found"]


def chart_crds(p: HelmPlan) -> list[dict]:
    """The CRDs in a chart directory's crds/ (what `crds: apply` creates or replaces before Helm runs)."""
    d = p.chart_dir
    if d is None or not (d / "crds").is_dir():
        return []
    out = []
    for f in sorted((d / "crds").glob("*.y*ml")):
        out += [o for o in yaml.safe_load_all(f.read_text()) if o and o.get("kind") == "CustomResourceDefinition"]
    return out


def helm_binary() -> Path:
    """The Helm CLI from the tool cache, built on first use."""
    from rayconformance.clusters.toolcache import ToolBuildError, ensure, versions

    version = versions().get("HELM_VERSION")
    if not version:
        raise HelmError("HELM_VERSION is not pinned in clusters/local/versions.env")
    try:
        return ensure("helm", version, "bin/helm") / "bin" / "helm"
    except ToolBuildError as e:
        raise HelmError(f"helm: {e}") from None


def helm_env(home: Path) -> dict[str, str]:
    """The environment helm runs with: its cache, config and data under `home` (not the user's)."""
    return {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data")}


def run(cmd: list[str], home: Path, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Run a helm command; its stdout, or a one-line HelmError naming the command and helm's last error line."""
    what = " ".join(Path(cmd[0]).name.split() + cmd[1:3])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=helm_env(home))
    except FileNotFoundError:
        raise HelmError(f"{what}: {cmd[0]} not found; run `clusters/local/build-tools.sh helm`") from None
    except subprocess.TimeoutExpired:
        raise HelmError(f"{what} did not finish in {timeout:.0f}s") from None
    if r.returncode != 0:
        last = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()][-1:] or [f"exit {r.returncode}"]
        raise HelmError(f"{what} failed: {last[0][:400]}")
    return r.stdout


def render(helm: str | Path, p: HelmPlan, values_file: Path, home: Path) -> list[dict]:
    """The objects `helm template` renders for the plan."""
    return [d for d in yaml.safe_load_all(run(template_command(helm, p, values_file), home)) if d]


# --- Installing and removing a release on a cluster (what the operator install calls for a `helm:` section) ------

RECORD_FILE = "operator-helm.yaml"  # in the run directory: what `uninstall_release` removes
VALUES_FILE = "helm-values.yaml"  # in the run directory: the values of the release installed


def install_release(spec: InstallSection, feature_gates: dict[str, bool], base: Path, kubeconfig: str | Path,
                    run_dir: Path, api, extra: list[dict], scale: float = 1.0, where: str = "install",
                    load_images=None) -> list[dict]:
    """Install the operator with Helm: `extra`, the install's other `manifests` rendered, first (e.g. CRDs the
    operator needs before it starts), the chart's CRDs when `crds: apply` (created or replaced by the suite, as Helm never upgrades them),
    then `helm upgrade --install`. `load_images(objects)` (the provider's, if it loads images) runs before anything
    is created. Returns the objects of the release as `helm template` renders them (to wait for the Deployment and
    observe it). Records what to remove in the run directory (`uninstall_release`)."""
    from rayconformance.kube import objects as engine

    p = plan(spec, feature_gates, base, where)
    binary, home = helm_binary(), run_dir / "helm-home"
    values = write_values(p, run_dir / VALUES_FILE)
    objects = render(binary, p, values, home)
    if load_images is not None:
        load_images(objects)
    crds = chart_crds(p) if p.crds == "apply" else []
    (run_dir / RECORD_FILE).write_text(yaml.safe_dump(
        {"plan": {**p.__dict__}, "kubeconfig": str(kubeconfig), "created": extra + crds}, sort_keys=False))
    engine.create_all(extra + crds, api, scale)
    run(install_command(binary, p, kubeconfig, values), home, timeout=DEFAULT_TIMEOUT * scale)
    return objects


def uninstall_release(run_dir: Path, api, timeout: float) -> None:
    """Remove what `install_release` installed: the release (`helm uninstall`), then the objects the suite created
    for it (CRDs last) and the release's namespace."""
    from rayconformance.kube import objects as engine

    path = run_dir / RECORD_FILE
    if not path.is_file():
        return
    rec = yaml.safe_load(path.read_text())
    p = HelmPlan(**rec["plan"])
    run(uninstall_command(helm_binary(), p, rec["kubeconfig"]), run_dir / "helm-home")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": p.namespace}}
    created = rec.get("created") or []
    if not any(o["kind"] == "Namespace" and o["metadata"]["name"] == p.namespace for o in created):
        created.append(namespace)
    engine.delete_all(created, api, timeout)
