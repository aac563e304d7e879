"""What the autoscaler reported to the GCS: only autoscaler v2 reports its state (a version > 0); v1 never does.
Prints `AUTOSCALER_STATE_VERSION <version>`."""
import ray
from ray.autoscaler.v2.sdk import get_cluster_status
ray.init()
print('AUTOSCALER_STATE_VERSION', get_cluster_status(ray.get_runtime_context().gcs_address).stats.autoscaler_version)
