"""rayconformance: the installed import package of the suite.

The repository keeps its folders (`fixtures/`, `clusters/`); `pyproject.toml` maps them into this one
package, so the plugin is `rayconformance.fixtures` and the cluster code `rayconformance.clusters`; the version
matrix runner lives here, in `rayconformance.matrix`. Nothing imports a top-level `fixtures` or `clusters`: those
names belong to other distributions.
"""
