"""A detached actor `cpu-holder` asking for one CPU and no GPU (the demand), and the IP of the Ray node it runs on
(`CPU_ACTOR <json>`, null if it was not placed within `wait` seconds)."""
import json
import ray

wait = 60  # parameter

ray.init(namespace='rayconformance')

@ray.remote(num_cpus=1)
class CPUHolder:
    def where(self):
        node = ray.get_runtime_context().get_node_id()
        return [n['NodeManagerAddress'] for n in ray.nodes() if n['NodeID'] == node][0]

holder = CPUHolder.options(name='cpu-holder', lifetime='detached').remote()
ready, _ = ray.wait([holder.where.remote()], timeout=wait)
print('CPU_ACTOR', json.dumps(ray.get(ready[0]) if ready else None))
