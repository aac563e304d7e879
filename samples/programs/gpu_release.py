"""The actor `gpu-holder` of gpu_demand.py killed; prints `KILLED gpu-holder`."""
import ray
ray.init(namespace='rayconformance')
ray.kill(ray.get_actor('gpu-holder'))
print('KILLED gpu-holder')
