"""A Serve application answering `answer` on / (its proxy on every address, as a Service needs); prints
`DEPLOYED`."""
import ray
from ray import serve

answer = 'hello'  # parameter

ray.init()
serve.start(http_options={'host': '0.0.0.0'})
@serve.deployment(ray_actor_options={'num_cpus': 0.1})
def hello(request):
    return answer
serve.run(hello.bind(), route_prefix='/')
print('DEPLOYED')
