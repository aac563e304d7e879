"""The local bed has kind's default StorageClass: a real local-path-provisioner binds a PVC, the node agent mounts
the bound volume, its data outlives the Pod, and deleting the claim deletes the volume."""
from __future__ import annotations

from pathlib import Path

import pytest

from bedkit import phase, pod_manifest, until

pytestmark = pytest.mark.integration


def _writer(name: str, cmd: str) -> dict:
    return pod_manifest(name, [{"name": "c", "image": "busybox", "command": ["sh", "-c", cmd],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                        restartPolicy="Never", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}])


def test_default_storage_class_binds_and_mounts_a_pvc(cpu, ns):
    classes = cpu.kube.get("/apis/storage.k8s.io/v1/storageclasses")["items"]
    default = [c for c in classes
               if (c["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert [c["provisioner"] for c in default] == ["rancher.io/local-path"]
    cpu.kube.create(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    cpu.create(ns, _writer("writer", "echo kept > /data/f && echo wrote"))
    cpu.wait_pod(ns, "writer", phase("Succeeded", "Failed"), 180, "writer done (volume provisioned first)")
    assert "wrote" in cpu.logs(ns, "writer", "c")
    pvc = cpu.kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/claim")
    assert pvc["status"]["phase"] == "Bound"
    pv = cpu.kube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
    host = Path(pv["spec"]["hostPath"]["path"])
    assert (host / "f").read_text() == "kept\n"
    cpu.create(ns, _writer("reader", "cat /data/f"))
    cpu.wait_pod(ns, "reader", phase("Succeeded"), 90)
    assert cpu.logs(ns, "reader", "c").strip() == "kept"
    for name in ("writer", "reader"):
        cpu.delete_pod(ns, name)
        cpu.wait_gone(ns, name, 60)
    cpu.kube.delete(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/claim")
    until(lambda: cpu.kube.get_or_none(f"/api/v1/persistentvolumes/{pv['metadata']['name']}") is None, 120,
          "PV deleted (reclaimPolicy Delete)")
    until(lambda: not host.exists(), 60, "the volume's directory removed by the provisioner's helper Pod")
