"""The node agent of the local test bed: a kubelet stand-in that runs bound Pods as host processes.

One agent process serves every Node of a cluster definition. Per Pod it builds a sandbox (network, mount,
UTS and IPC namespaces held by a small "pause" process) and runs each container as PID 1 of its own PID
namespace, so signals behave as in a real container (a shell without a SIGTERM handler ignores SIGTERM).

Modules: `agent` (wiring, adoption), `kube` (API access), `node` (Node, Lease, status), `pods` (watch and
per-Pod lifecycle), `status` (phase and conditions), `sandbox` (namespaces, network, files), `volumes`,
`containers` (processes), `probes` (probes and hooks), `env`, `images`, `devices` (GPUs), `logs`,
`store` (state that survives an agent restart), `cinit` (runs inside the namespaces; stdlib only).
"""
