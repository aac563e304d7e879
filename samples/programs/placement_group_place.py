"""A detached placement group `spread` of `n` half-CPU bundles that must each land on a node of its own
(STRICT_SPREAD), not waited for; prints `PG_CREATED <id>`."""
import ray
from ray.util.placement_group import placement_group

n = 2  # parameter

ray.init(namespace='rayconformance')
pg = placement_group([{'CPU': 0.5}] * n, strategy='STRICT_SPREAD', name='spread', lifetime='detached')
print('PG_CREATED', pg.id.hex())
