"""The actors of tpu_demand.py (`tpu-<i>` for each of `hosts`) killed; prints `KILLED <hosts>`."""
import ray

hosts = 1  # parameter

ray.init(namespace='rayconformance')
for i in range(hosts):
    ray.kill(ray.get_actor(f'tpu-{i}'))
print('KILLED', hosts)
