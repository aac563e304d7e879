"""From a task on every alive Ray node: whether Ray's TLS is on there, and the certificate the GCS presents to a TLS
client holding that node's certificate, verified against that node's CA file (Ray's own RAY_TLS_* settings). Prints
one line per node, `TLS <node IP> <RAY_USE_TLS> <JSON: the GCS certificate's subjectAltName, or the error>`, and
`NODES <count>`."""
import json
import os
import socket
import ssl

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init()
gcs_host, gcs_port = ray.get_runtime_context().gcs_address.rsplit(':', 1)


@ray.remote(num_cpus=0)
def handshake(host, port):
    use_tls = os.environ.get('RAY_USE_TLS')
    try:
        ctx = ssl.create_default_context(cafile=os.environ['RAY_TLS_CA_CERT'])
        ctx.check_hostname = False  # the GCS is reached by its Pod IP; the chain is what is verified
        ctx.load_cert_chain(os.environ['RAY_TLS_SERVER_CERT'], os.environ['RAY_TLS_SERVER_KEY'])
        ctx.set_alpn_protocols(['h2'])
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as conn:
                seen = [f'{kind}:{value}' for kind, value in conn.getpeercert().get('subjectAltName', ())]
    except (KeyError, OSError, ssl.SSLError) as e:
        seen = f'{type(e).__name__}: {e}'
    return ray.util.get_node_ip_address(), use_tls, seen


nodes = [n for n in ray.nodes() if n['Alive']]
for ip, use_tls, seen in ray.get([
        handshake.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n['NodeID'], soft=False)).remote(
            gcs_host, gcs_port) for n in nodes]):
    print('TLS', ip, use_tls, json.dumps(seen))
print('NODES', len(nodes))
