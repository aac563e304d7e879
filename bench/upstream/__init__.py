"""The parts of bench/upstream_samples.py (KubeRay's own samples on a cluster): `plan` (which samples run and what
they need first) and `goals` (whether a sample reached its goal, why not, whether it never can)."""
