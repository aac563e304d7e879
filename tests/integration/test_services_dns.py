"""Services: CoreDNS names and kube-proxy ClusterIPs work from Pods and from the host."""
from __future__ import annotations

import urllib.request

import pytest

from bedkit import phase, until
from rayconformance.clusters.local import dns

pytestmark = pytest.mark.integration

SERVE = "hostname > /tmp/index.html && cd /tmp && exec python3 -m http.server 8080"


@pytest.fixture(scope="module")
def web(cpu):
    ns = cpu.namespace("svc")
    labels = {"app": "web"}
    cpu.create(ns, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                    "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": labels}, "spec": {
                                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                                "whenUnsatisfiable": "ScheduleAnyway",
                                                                "labelSelector": {"matchLabels": labels}}],
                                 "containers": [{"name": "web", "image": "python:3.11",
                                                 "command": ["sh", "-c", SERVE],
                                                 "ports": [{"containerPort": 8080, "name": "http"}],
                                                 "readinessProbe": {"httpGet": {"path": "/index.html",
                                                                                "port": "http"},
                                                                    "periodSeconds": 1}}]}}}})
    cpu.create(ns, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                    "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
    cpu.create(ns, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-headless"},
                    "spec": {"clusterIP": "None", "selector": labels, "ports": [{"port": 8080}]}})
    until(lambda: (cpu.apps.read_namespaced_deployment("web", ns).status.available_replicas or 0) == 2, 90,
          "Deployment web available")
    pods = cpu.pods(ns, "app=web")
    svc = cpu.core.read_namespaced_service("web", ns)
    yield ns, pods, svc.spec.cluster_ip
    cpu.delete_namespace(ns)


def test_deployment_pods_ready_on_both_nodes(cpu, web):
    ns, pods, _ = web
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} == {n.name for n in cpu.defn.nodes}


def test_pod_reaches_service_by_name_and_cluster_ip(cpu, web):
    ns, pods, cluster_ip = web
    names = {p["metadata"]["name"] for p in pods}
    script = (f"wget -nv -O- http://web/index.html && wget -nv -O- http://web.{ns}.svc.cluster.local/index.html && "
              f"wget -nv -O- http://{cluster_ip}/index.html && wget -nv -O- http://$WEB_SERVICE_HOST/index.html && "
              "python3 -c \"import socket; print('HEADLESS', ' '.join(sorted("
              "socket.gethostbyname_ex('web-headless')[2])))\"")
    cpu.create(ns, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
                    "spec": {"restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "busybox", "command": ["sh", "-c", script]}]}})
    p = cpu.wait_pod(ns, "client", phase("Succeeded", "Failed"), 90)
    out = cpu.logs(ns, "client", "c")
    assert p["status"]["phase"] == "Succeeded", (
        f"client on {p['spec'].get('nodeName')} ({p['status'].get('podIP')}) failed; backends "
        f"{[(x['spec'].get('nodeName'), x['status'].get('podIP')) for x in pods]}; its output:\n{out}")
    lines = out.splitlines()
    assert len([line for line in lines if line in names]) == 4, out
    headless = next(line for line in lines if line.startswith("HEADLESS"))
    assert headless.split()[1:] == sorted(x["status"]["podIP"] for x in pods)


def test_host_reaches_cluster_ip_and_both_backends(web):
    _, pods, cluster_ip = web
    seen = set()

    def both():
        with urllib.request.urlopen(f"http://{cluster_ip}/index.html", timeout=5) as r:
            seen.add(r.read().decode().strip())
        return seen == {p["metadata"]["name"] for p in pods}
    until(both, 30, "responses from both Pods through the ClusterIP")


def test_headless_service_resolves_to_pod_ips(cpu, web):
    ns, pods, cluster_ip = web
    rcode, addrs = dns.query(f"web-headless.{ns}.svc.cluster.local", cpu.defn.dns_address)
    assert rcode == 0 and sorted(addrs) == sorted(p["status"]["podIP"] for p in pods)
    rcode, addrs = dns.query(f"web.{ns}.svc.cluster.local", cpu.defn.dns_address)
    assert addrs == [cluster_ip]
    ip = pods[0]["status"]["podIP"]
    rcode, addrs = dns.query(f"{ip.replace('.', '-')}.{ns}.pod.cluster.local", cpu.defn.dns_address)
    assert addrs == [ip]


def test_names_outside_the_cluster_do_not_resolve(cpu):
    rcode, addrs = dns.query("example.com", cpu.defn.dns_address)
    assert addrs == [] and rcode != 0  # no forwarding: nothing leaves the machine


def test_kube_dns_service_points_at_coredns(cpu):
    svc = cpu.core.read_namespaced_service("kube-dns", "kube-system")
    rcode, addrs = dns.query("kubernetes.default.svc.cluster.local", svc.spec.cluster_ip)
    assert addrs == ["10.96.0.1"]
