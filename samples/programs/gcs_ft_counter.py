"""The detached actor `counter` in Ray namespace `ns` (made if `create`, else looked up) incremented once: prints
`COUNTER <its value>`."""
import ray

ns = 'rayconformance'  # parameter
create = False  # parameter

ray.init(namespace=ns)

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n

if create:
    c = Counter.options(name='counter', lifetime='detached', max_restarts=-1).remote()
else:
    c = ray.get_actor('counter')
print('COUNTER', ray.get(c.inc.remote()))
