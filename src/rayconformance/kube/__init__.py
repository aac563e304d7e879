"""Kubernetes access: `client.py` (an ApiClient from a kubeconfig, the API accessors, the cluster's facts),
`listwatch.py` (every change to a list of objects from a chosen moment on), `objects.py` (creating, replacing
and deleting sets of objects), `namespaces.py` (the per-test namespaces, and their sweep at the end of a
run)."""
