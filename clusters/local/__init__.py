"""The local test bed: real control-plane components and a node agent running Pods as host processes, with its
own DNS, kube-proxy, storage and network (`testbed.py` brings it up; `python -m rayconformance.clusters.local`)."""

# the definition a bed uses when none is named: a CPU node and an accelerator node whose fake GPUs and TPU chips serve
# every GPU and TPU feature a profile claims, so that a default run can certify them
DEFAULT_CLUSTER = "local-gpu"
