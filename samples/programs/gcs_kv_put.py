"""`value` written under `rc-key` in the GCS's internal key-value store (what the GCS keeps in its store); prints
`PUT`."""
import ray
from ray.experimental.internal_kv import _internal_kv_put

value = b''  # parameter

ray.init()
_internal_kv_put(b'rc-key', value, namespace=b'rayconformance')
print('PUT')
