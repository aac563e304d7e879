"""Kubernetes access: `client.py` (an ApiClient from a kubeconfig, the API accessors, the cluster's facts),
`httpclient.py` (HTTP to the apiserver through httpx, configured as an ApiClient is: how Ray's APIs are reached
through services/proxy), `listwatch.py` (every change to a list of objects from a chosen moment on), `objects.py`
(creating, replacing and deleting sets of objects), `namespaces.py` (the per-test namespaces, and their sweep at
the end of a run)."""
