"""What the GCS's internal key-value store holds under `rc-key` (gcs_kv_put.py): prints `GOT <value or None>`."""
import ray
from ray.experimental.internal_kv import _internal_kv_get
ray.init()
print('GOT', _internal_kv_get(b'rc-key', namespace=b'rayconformance'))
