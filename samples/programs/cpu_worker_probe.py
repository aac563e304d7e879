"""What a CPU-only worker (`ip`: its Pod's IP) is handed: its Ray node's GPUs (`CPU_NODE <json>`) and what a task
pinned to it sees (`CPU_TASK <json>`)."""
import json, os
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ip = ''  # parameter

ray.init()
nodes = [n for n in ray.nodes() if n['Alive'] and n['NodeManagerAddress'] == ip]
print('CPU_NODE', json.dumps({'gpus': nodes[0]['Resources'].get('GPU', 0)} if nodes else None))

@ray.remote(num_cpus=1)
def look():
    return {'gpu_ids': [str(g) for g in ray.get_gpu_ids()],
            'NVIDIA_VISIBLE_DEVICES': os.environ.get('NVIDIA_VISIBLE_DEVICES')}

pinned = NodeAffinitySchedulingStrategy(nodes[0]['NodeID'], soft=False) if nodes else None
print('CPU_TASK', json.dumps(ray.get(look.options(scheduling_strategy=pinned).remote(), timeout=120) if nodes else None))
