"""The placement group `spread` removed; prints `PG_REMOVED`."""
import ray
from ray.util.placement_group import get_placement_group, remove_placement_group
ray.init(namespace='rayconformance')
remove_placement_group(get_placement_group('spread'))
print('PG_REMOVED')
