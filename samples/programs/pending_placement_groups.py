"""A placement group of one 1-CPU bundle is placed (a worker comes up for it) and removed, leaving that worker idle;
at once a placement group of two 1-CPU bundles on different nodes (STRICT_SPREAD) needs it and a second worker.
Prints each group's placement within `wait` seconds (`PG1_READY`, `PG2_READY`) and the Ray nodes alive after it
(`NODES1`, `NODES2`)."""
import json
import ray
from ray.util.placement_group import placement_group, remove_placement_group

wait = 60  # parameter

ray.init()

def alive():
    return sorted([n['NodeID'], n['NodeManagerAddress']] for n in ray.nodes() if n['Alive'])

pg1 = placement_group([{'CPU': 1}], strategy='STRICT_SPREAD')
print('PG1_READY', json.dumps(pg1.wait(wait)))
print('NODES1', json.dumps(alive()))
remove_placement_group(pg1)
pg2 = placement_group([{'CPU': 1}] * 2, strategy='STRICT_SPREAD')
print('PG2_READY', json.dumps(pg2.wait(wait)))
print('NODES2', json.dumps(alive()))
remove_placement_group(pg2)
