"""The operator under test: its profile, installed, waited for, observed, and swapped for an earlier release.

`profiles.py` reads the operator profiles (profiles/*.yaml): what the operator is, how to install it, which
features it claims; `install_section.py` types each `install.<provider>` section as the profile loads, and works
out the image an install runs. A section says where the operator's own manifests are (kustomize dirs or YAML
files, or a KubeRay `source` built into the tool cache: a release, or a source tree given by --operator-tree,
`source_tree.py`), or its Helm chart (`helm.py`), the namespace, the image, extra args and env, and feature gates.
`source.py` builds a source, `render.py` renders the section to plain objects, `installer.py` creates them (with
kube/objects.py) and waits until the operator runs, `release_swap.py` puts an earlier release in its place and
back for the operator-upgrade test (`helm_swap.py`: as a Helm user does, for an install made with Helm). What
cannot be installed is an OperatorError, one line.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rayconformance.kube.objects import ObjectsError
from rayconformance.providers import ProviderError

from .helm import HelmError
from .install_section import SectionError


class OperatorError(RuntimeError):
    """The operator cannot be installed or never became ready; one line for the user."""


@contextmanager
def operator_errors() -> Iterator[None]:
    """Turns a provider's, the object engine's, Helm's, a source tree's or an install section's one-line error into
    an OperatorError with the same message."""
    # imported here: `python -m rayconformance.operator.source_tree` would otherwise load that module twice
    from .source_tree import SourceTreeError
    try:
        yield
    except (ProviderError, ObjectsError, HelmError, SourceTreeError, SectionError) as e:
        raise OperatorError(str(e)) from None
