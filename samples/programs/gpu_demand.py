"""A detached actor `gpu-holder` asking for one GPU (the demand), and where it ran (`GPU_ACTOR <json>`, null if it
was not placed within `wait` seconds)."""
import json
import ray

wait = 60  # parameter

ray.init(namespace='rayconformance')

@ray.remote(num_gpus=1)
class GPUHolder:
    def where(self):
        return {'node_id': ray.get_runtime_context().get_node_id(),
                'gpu_ids': [str(g) for g in ray.get_gpu_ids()]}

holder = GPUHolder.options(name='gpu-holder', lifetime='detached').remote()
ready, _ = ray.wait([holder.where.remote()], timeout=wait)
seen = ray.get(ready[0]) if ready else None
if seen:
    node = [n for n in ray.nodes() if n['NodeID'] == seen['node_id']]
    seen['node_ip'] = node[0]['NodeManagerAddress'] if node else None
    seen['node_gpus'] = node[0]['Resources'].get('GPU', 0) if node else None
print('GPU_ACTOR', json.dumps(seen))
