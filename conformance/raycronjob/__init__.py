"""raycronjob conformance tests (KubeRay 1.7+, alpha feature gate RayCronJob)."""
