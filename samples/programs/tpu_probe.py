"""For each host's Ray node (`ips`: the hosts' Pod IPs; `chips`: each host's chips): its TPU resource, and what a
task pinned to it, holding all its TPUs, sees of the container's devices (the device plugin's TPU_VISIBLE_DEVICES);
null where no such task ran within 60 s. Prints `TPU_HOSTS <json>`."""
import json, os, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ips = []  # parameter
chips = 4  # parameter

ray.init()
def hosts():
    return [n for n in ray.nodes() if n['Alive'] and n['NodeManagerAddress'] in ips]
deadline = time.time() + 60
while time.time() < deadline and len(hosts()) < len(ips):
    time.sleep(1)

@ray.remote(num_cpus=0, resources={'TPU': chips})
def look():
    return os.environ.get('TPU_VISIBLE_DEVICES')

seen = {}
for n in hosts():
    ref = look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n['NodeID'], soft=False)).remote()
    ready, _ = ray.wait([ref], timeout=60)
    seen[n['NodeManagerAddress']] = {'tpu': n['Resources'].get('TPU', 0),
                                     'devices': ray.get(ready[0]) if ready else None}
print('TPU_HOSTS', json.dumps(seen))
