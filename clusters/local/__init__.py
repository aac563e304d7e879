"""The local test bed: real control-plane components and a node agent running Pods as host processes, with its
own DNS, kube-proxy, storage and network (`testbed.py` brings it up; `python -m rayconformance.clusters.local`)."""
