"""Whether the placement group `spread` is placed within 120 s: prints `PG_READY <True or False>`."""
import ray
from ray.util.placement_group import get_placement_group
ray.init(namespace='rayconformance')
print('PG_READY', get_placement_group('spread').wait(120))
