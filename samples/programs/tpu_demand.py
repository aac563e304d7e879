"""Detached actors `tpu-<i>`, one per host (`hosts`), each needing all of a host's `chips` TPU (a Ray resource here,
no device); prints `TPU_ACTORS <json>`: the IPs of the Ray nodes they run on, of those placed within `wait` seconds."""
import json
import ray

chips = 4  # parameter
hosts = 1  # parameter
wait = 60  # parameter

ray.init(namespace='rayconformance')

@ray.remote(num_cpus=0, resources={'TPU': chips})
class Chips:
    def ip(self):
        node = ray.get_runtime_context().get_node_id()
        return [n['NodeManagerAddress'] for n in ray.nodes() if n['NodeID'] == node][0]

hs = [Chips.options(name=f'tpu-{i}', lifetime='detached').remote() for i in range(hosts)]
ready, _ = ray.wait([h.ip.remote() for h in hs], num_returns=hosts, timeout=wait)
print('TPU_ACTORS', json.dumps([ray.get(r) for r in ready]))
