"""What a run needs set up before it starts, read from its suite options (`make conformance`'s CONFORMANCE_ARGS):

    python -m rayconformance.run.setup_needs ray-venvs|bring-up-builds|bed-builds|bed-packages [SUITE OPTIONS...]

`ray-venvs` prints the Ray versions whose local-bed virtualenv the run uses (`--ray-version`, else the operator
profile's first `rayVersions`); `bring-up-builds` what the run builds when it brings the local bed up, as
build-tools.sh components: the default StorageClass's provisioner (`localpath`), the KubeRay release its profile
installs (`kuberay@v1.6.1`), those of the profiles it is upgraded from when it tests the operator upgrade and
Traefik when it tests a feature whose tests use the Gateway implementation. Both print nothing when the run is not on
the local bed (kind, an existing cluster). `bed-builds` prints the base `make` builds before the run (tools-base):
the local bed's components (etcd, Kubernetes, CoreDNS) on the local bed, and on kind where no Docker engine answers
(the project's engine runs an offline node image made of them), none on kind on a Docker engine that answers or on
an existing cluster; and the Gateway API CRDs the profiles install, on every provider. `bed-packages` prints `bed`
when the run needs the local bed's Debian packages (on the local bed), else nothing. The options are read as the
suite reads them (`--conformance-options-file` too; the command line wins), and the provider is resolved as a run
resolves it. Bad input is one `setup_needs: ...` line and exit 2.
"""
from __future__ import annotations

import argparse
import sys

import yaml

from rayconformance import features, providers
from rayconformance.testing.context import FIXTURE_FEATURES
from rayconformance.operator import profiles

from .options import OPTS

NAMES = ("provider", "cluster", "operator-profile", "ray-version", "attach-kubeconfig", "supported-features",
         "exempt-features")
FLAGS = ("all-features", "core-only")


def read(argv: list[str]) -> dict:
    """The options that decide what to set up: command line over the options file over the defaults."""
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ap.add_argument("--conformance-options-file")
    for name in NAMES:
        ap.add_argument(f"--{name}")
    for name in FLAGS:
        ap.add_argument(f"--{name}", action="store_true", default=None)
    given, _ = ap.parse_known_args(argv)
    from_file = {}
    if given.conformance_options_file:
        try:
            with open(given.conformance_options_file) as f:
                from_file = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ValueError(f"--conformance-options-file {given.conformance_options_file}: "
                             f"{' '.join(str(e).split())}") from None
        if not isinstance(from_file, dict):
            raise ValueError(f"--conformance-options-file {given.conformance_options_file}: not a mapping")
    out = {}
    for name in NAMES + FLAGS:
        cli = getattr(given, name.replace("-", "_"))
        out[name] = cli if cli is not None else from_file.get(name)
    out["operator-profile"] = out["operator-profile"] or next(o.default for o in OPTS if o.name == "operator-profile")
    return out


def provider_of(v: dict) -> str:
    if v["attach-kubeconfig"]:
        return "local"
    if v["provider"] is None and v["cluster"] is None:
        return providers.default_provider()[0]
    return providers.resolve(v["provider"], v["cluster"])[0]


def ray_venvs(argv: list[str]) -> list[str]:
    v = read(argv)
    if provider_of(v) != "local":
        return []
    if v["ray-version"]:
        return [str(v["ray-version"])]
    version = profiles.load(str(v["operator-profile"])).ray_version
    return [version] if version else []


def tested(v: dict, profile) -> set[str]:
    """The features the run tests, as options.py decides them (without the Ray version's limits)."""
    def names(value) -> set[str]:
        return {s.strip() for s in (value.split(",") if isinstance(value, str) else value or ()) if s.strip()}

    if v["all-features"]:
        out = set(features.NAMES)
    elif v["supported-features"]:
        out = names(v["supported-features"])
    else:
        out = set(profile.features)
    out -= names(v["exempt-features"])
    if v["core-only"]:
        out = {f for f in out if f in features.BY_NAME and features.BY_NAME[f].level == "core"}
    return out


def bring_up_builds(argv: list[str]) -> list[str]:
    v = read(argv)
    if provider_of(v) != "local":
        return []
    profile = profiles.load(str(v["operator-profile"]))
    out, features_tested = ["localpath"], tested(v, profile)  # localpath: clusters/local/storage.py, every bring-up
    earlier = profile.upgrade_from if profiles.UPGRADE_FEATURE in features_tested else ()
    for p in (profile, *(profiles.load(str(profiles.upgrade_source(profile.path, u))) for u in earlier)):
        source = p.install["local"].source if "local" in p.install else None
        if source is not None and source.name == "kuberay" and source.version:
            out.append(f"kuberay@{source.version}")
    if features_tested & set(FIXTURE_FEATURES["gateway"]):
        out.append("traefik")  # the Gateway implementation (samples/gateway-traefik.yaml)
    return list(dict.fromkeys(out))


BED_BASE = ("etcd", "kubernetes", "coredns")
GATEWAY_CRDS = "gatewayapi"


def bed_builds(argv: list[str]) -> list[str]:
    provider = provider_of(read(argv))
    on_bed_base = provider == "local" or (provider == "kind" and not providers.docker_answers())
    return [*(BED_BASE if on_bed_base else ()), GATEWAY_CRDS]


def bed_packages(argv: list[str]) -> list[str]:
    """`bed` when the run is on the local bed, which needs the Debian packages of clusters/local/install-deps.sh
    (Redis, iptables, the CNI plugins, ...); nothing otherwise: kind's own are clusters/kind/install-deps.sh's (make
    kind-deps), and a run on an existing cluster needs none."""
    return ["bed"] if provider_of(read(argv)) == "local" else []


COMMANDS = {"ray-venvs": ray_venvs, "bring-up-builds": bring_up_builds, "bed-builds": bed_builds,
            "bed-packages": bed_packages}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(f"setup_needs: usage: python -m rayconformance.run.setup_needs {'|'.join(COMMANDS)} "
              "[SUITE OPTIONS...]", file=sys.stderr)
        return 2
    try:
        print(" ".join(COMMANDS[argv[0]](argv[1:])))
    except (ValueError, providers.ProviderError, profiles.ProfileError) as e:
        print(f"setup_needs: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
