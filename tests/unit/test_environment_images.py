"""The run's images are made ready once each: the Ray image at bring-up, the samples' images, and an image two
samples share, are each loaded (or made) once per run."""
from __future__ import annotations

from types import SimpleNamespace

from rayconformance.providers import images_of
from rayconformance.run.environment import Session


class Recording:
    def __init__(self):
        self.loads: list[list[str]] = []

    def prepare_images(self, objects):
        self.loads.append(images_of(objects))


def test_each_image_is_prepared_once_per_run():
    session = Session(SimpleNamespace(ray_version="2.60.0"))
    session.provider = Recording()
    session._prepare_images(["rayproject/ray:2.60.0"])  # as bring-up does
    session._prepare_samples(["raycluster-basic", "loadgen"])
    session._prepare_samples(["redis", "loadgen"])
    session._prepare_images(["rayproject/ray:2.60.0", "redis:7.4.0"])
    assert session.provider.loads == [["rayproject/ray:2.60.0"], ["python:3.11-slim"], ["redis:7.4.0"]]


def test_a_provider_that_loads_nothing_is_not_asked():
    session = Session(SimpleNamespace(ray_version="2.60.0"))
    session.provider = object()
    session._prepare_samples(["loadgen"])
    assert session.images_ready == {"python:3.11-slim"}


def test_the_releases_a_test_swaps_in_are_made_ready_at_bring_up():
    from rayconformance.operator import profiles
    from rayconformance.providers import Cluster

    session = Session(SimpleNamespace(ray_version="2.60.0", profile=profiles.load("kuberay-v1.6.1")))
    session.provider = Recording()
    session.env.cluster = Cluster(provider="local", name="local-cpu", kubeconfig=None)
    earlier = profiles.load("kuberay-v1.5.1").install["local"].image  # operatorUpgradeFrom: [kuberay-v1.5.1]
    assert session._earlier_operator_images() == [earlier]
    session._prepare_images(session._earlier_operator_images())
    assert session.provider.loads == [[earlier]]
