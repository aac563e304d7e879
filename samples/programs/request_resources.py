"""Ray's autoscaler asked for `n` 1-CPU bundles at once (`request_resources`; it replaces an earlier request, so `n`
0 clears it); prints `REQUESTED <n>`."""
import ray
from ray.autoscaler.sdk import request_resources

n = 1  # parameter

ray.init()
request_resources(bundles=[{'CPU': 1}] * n)
print('REQUESTED', n)
