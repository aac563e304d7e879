"""The cluster's GPUs (`CLUSTER_GPU <json>`, waited for up to 60 s), and what a task asking for one GPU is handed
and where it runs (`GPU_TASK <json>`, null if it did not run within 120 s)."""
import json, time
import ray
ray.init()
deadline = time.time() + 60
while time.time() < deadline and not ray.cluster_resources().get('GPU'):
    time.sleep(1)
print('CLUSTER_GPU', json.dumps(ray.cluster_resources().get('GPU')))

@ray.remote(num_gpus=1)
def probe():
    import os
    import ray
    return {'node_id': ray.get_runtime_context().get_node_id(), 'gpu_ids': [str(g) for g in ray.get_gpu_ids()],
            'NVIDIA_VISIBLE_DEVICES': os.environ.get('NVIDIA_VISIBLE_DEVICES'),
            'CUDA_VISIBLE_DEVICES': os.environ.get('CUDA_VISIBLE_DEVICES')}

try:
    task = ray.get(probe.remote(), timeout=120)
except ray.exceptions.GetTimeoutError:
    task = None
if task:
    node = [n for n in ray.nodes() if n['NodeID'] == task['node_id']]
    task['node_ip'] = node[0]['NodeManagerAddress'] if node else None
    task['node_gpus'] = node[0]['Resources'].get('GPU') if node else None
print('GPU_TASK', json.dumps(task))
