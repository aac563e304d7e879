"""Upgrading the operator from an earlier release, for the RayServiceOperatorUpgrade test: `ReleaseSwap` puts the
earlier release (another profile) in place of the session's install, upgrades back as a user would, and always
leaves the session's install in place; `rollout_state` says when a Deployment has rolled out to an image. An install
of manifests is swapped by replacing the objects; a Helm install by downgrading and upgrading the Helm release
(helm_swap.py)."""
from __future__ import annotations

from pathlib import Path

from kubernetes import client

from rayconformance.testing.waiting import wait_until
from rayconformance.kube.client import running_and_ready
from rayconformance.kube.objects import DELETE_TIMEOUT, delete_all, object_key, replace_all

from . import OperatorError, helm, helm_swap, operator_errors
from .install_section import InstallSection
from .installer import deployment_of, installed_objects, observe, prepared, ready_timeout, section


def leftovers(created: list[dict], kept: list[dict]) -> list[dict]:
    """The objects of `created` (made by installing an earlier release, where none was) that `kept` (the install
    to go back to) does not have: what must go to leave exactly that install."""
    keep = {object_key(o) for o in kept}
    return [o for o in created if object_key(o) not in keep]


def rollout_state(dep, pods: list, image: str) -> tuple[bool, str]:
    """Whether the Deployment `dep` (a V1Deployment) has rolled out to `image`: its newest generation observed,
    every replica updated, ready and available, and its Pods (`pods`, those its selector matches) exactly that
    many, all running `image`, Ready and not terminating. Returns that and a one-line description."""
    want = dep.spec.replicas if dep.spec.replicas is not None else 1
    st = dep.status
    template = [c.image for c in dep.spec.template.spec.containers]
    counts = {"updated": st.updated_replicas or 0, "ready": st.ready_replicas or 0,
              "available": st.available_replicas or 0}
    observed = (dep.metadata.generation or 0) <= (st.observed_generation or 0)
    pod_images = [(p.metadata.name, [c.image for c in p.spec.containers], running_and_ready(p)) for p in pods]
    ok = (observed and image in template and all(v == want for v in counts.values()) and len(pods) == want
          and all(image in imgs and ready for _, imgs, ready in pod_images))
    pods_text = ", ".join(f"{n} ({'/'.join(imgs)}{', Ready' if ready else ', not Ready'})"
                          for n, imgs, ready in pod_images) or "none"
    return ok, (f"image {'/'.join(template)}, generation {dep.metadata.generation} observed "
                f"{st.observed_generation}, replicas {want} (" + ", ".join(f"{k} {v}" for k, v in counts.items())
                + f"), Pods: {pods_text}")


def wait_rolled_out(api: client.ApiClient, namespace: str, name: str, image: str, timeout: float) -> None:
    """Wait until the Deployment has rolled out to `image` (`rollout_state`); AssertionError naming the last state."""
    __tracebackhide__ = True
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)

    def get():
        dep = apps.read_namespaced_deployment(name, namespace)
        selector = ",".join(f"{k}={v}" for k, v in (dep.spec.selector.match_labels or {}).items())
        return rollout_state(dep, core.list_namespaced_pod(namespace, label_selector=selector).items, image)

    wait_until(get, lambda s: s[0], f"operator Deployment {namespace}/{name} to run only {image}, rolled out and "
               f"Ready", timeout, render=lambda s: s[1])


def _image(dep: dict) -> str:
    return next(c["image"] for c in dep["spec"]["template"]["spec"]["containers"])


class ReleaseSwap:
    """Puts an earlier release of the operator (another profile) in place of the one the session installed,
    upgrades back to the session's install the way a user would (`upgrade`), and `restore`s that install exactly
    when the test is over, whatever happened. `session_objects` are the objects the session installed
    (`INSTALLED_FILE`), `session_spec` its profile's install section for the provider, `helm_session` its Helm
    install when it made one (then the swap goes through Helm)."""

    def __init__(self, api: client.ApiClient, provider, provider_name: str, session_spec: InstallSection,
                 session_objects: list[dict], scale: float = 1.0, helm_session: helm_swap.HelmSession | None = None):
        self.api, self.provider, self.provider_name, self.scale = api, provider, provider_name, scale
        self.session_spec, self.session_objects, self.helm = session_spec, session_objects, helm_session
        self.session_dep = deployment_of(session_spec, session_objects)
        self.created: list[dict] = []  # made by the earlier release's install, where there was none
        self.swapped = False  # the operator runs something other than the session's install

    @classmethod
    def for_session(cls, api, provider, provider_name: str, profile, run_dir: Path, scale: float = 1.0,
                    tree: str | None = None):
        """The swap for the run's operator, or None when the suite did not install it (nothing to go back to).
        `tree` is the source tree the session's install was built from (--operator-tree), for a Helm install."""
        spec = profile.install.get(provider_name)
        objects = installed_objects(run_dir)
        if spec is None or objects is None:
            return None
        session = helm_swap.session_release(run_dir, tree) if spec.helm else None
        if spec.helm and session is None:
            raise OperatorError(f"the session's Helm install left no record ({run_dir}/{helm.RECORD_FILE}), so "
                                f"the operator cannot be swapped through Helm (was the install interrupted?)")
        return cls(api, provider, provider_name, spec, objects, scale, session)

    def install_previous(self, previous) -> dict:
        """Install the release of the profile `previous` in place of the session's operator (its CRDs replace the
        session's, its Deployment the session's; for a Helm install, the session's Helm release downgraded to the
        earlier release's chart), wait until it runs; returns what is observed running."""
        if self.provider_name not in previous.install:
            raise OperatorError(f"profile {previous.name} has no install.{self.provider_name}; it cannot be "
                                f"installed as the release to upgrade from")
        if self.helm is not None:
            return self._downgrade(previous)
        spec, base, _ = section(previous, self.provider_name)
        objects = prepared(spec, previous, self.provider, base)
        dep = deployment_of(spec, objects)
        self.swapped = True
        if object_key(dep) != object_key(self.session_dep):  # elsewhere: stop the session's operator first
            client.AppsV1Api(self.api).patch_namespaced_deployment_scale(
                self.session_dep["metadata"]["name"], self.session_dep["metadata"]["namespace"],
                {"spec": {"replicas": 0}})
        with operator_errors():
            replace_all(objects, self.api, self.scale, created=self.created)
        wait_rolled_out(self.api, dep["metadata"]["namespace"], dep["metadata"]["name"], _image(dep),
                        ready_timeout(spec, self.scale))
        return observe(spec, objects, self.api)

    def _downgrade(self, previous) -> dict:
        earlier = helm_swap.earlier_plan(self.helm, self.session_spec, previous, self.provider_name)
        self.swapped = True
        objects = helm_swap.downgrade(self.helm, earlier, f"helm-values-{previous.name}.yaml", self.api,
                                      getattr(self.provider, "prepare_images", None), self.created, self.scale)
        dep = deployment_of(self.session_spec, objects)
        wait_rolled_out(self.api, dep["metadata"]["namespace"], dep["metadata"]["name"], _image(dep),
                        ready_timeout(previous.install[self.provider_name], self.scale))
        return observe(self.session_spec, objects, self.api)

    def upgrade(self) -> dict:
        """Upgrade to the session's install as a user would: its CRDs replace the earlier release's, then its other
        objects (the operator's Deployment: image, args) replace theirs (for a Helm install: `helm upgrade` to the
        session's chart and values); what only the earlier release had goes. Waits until the session's operator
        has rolled out; returns what is observed running."""
        with operator_errors():
            if self.helm is not None:
                helm_swap.upgrade_back(self.helm, self.api, self.scale)
            else:
                replace_all(self.session_objects, self.api, self.scale)
            extra = leftovers(self.created, self.session_objects)
            if extra:
                delete_all(extra, self.api, DELETE_TIMEOUT * self.scale)
        dep = self.session_dep
        wait_rolled_out(self.api, dep["metadata"]["namespace"], dep["metadata"]["name"], _image(dep),
                        ready_timeout(self.session_spec, self.scale))
        self.swapped, self.created = False, []
        return observe(self.session_spec, self.session_objects, self.api)

    def restore(self) -> None:
        """Leave the session's install in place: upgrade back to it unless already done (or never swapped)."""
        if self.swapped:
            self.upgrade()
