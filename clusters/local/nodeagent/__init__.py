"""The node agent of the local test bed: a kubelet stand-in that runs bound Pods as host processes.

One agent process serves every Node of a cluster definition. Per Pod it builds a sandbox (network, mount,
UTS and IPC namespaces held by a small "pause" process) and runs each container as PID 1 of its own PID
namespace, so signals behave as in a real container (a shell without a SIGTERM handler ignores SIGTERM).

The Pod lifecycle follows the kubelet's own split: `podwatch` (Pod source), `podworker` (sync loop), `runtime`,
`termination`, `probemanager`, `statusmanager`, `restart`. README.md has one line per module.
"""
