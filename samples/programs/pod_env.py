"""What the driver's Pod was given: prints `ENV <RAY_CLUSTER_NAME> <RAY_CLUSTER_NAMESPACE> <CONFORMANCE_NOTE> <what
the postStart hook wrote to post_start, False if nothing>`."""
import os

post_start = ''  # parameter

print('ENV', os.environ.get('RAY_CLUSTER_NAME'), os.environ.get('RAY_CLUSTER_NAMESPACE'),
      os.environ.get('CONFORMANCE_NOTE'), os.path.exists(post_start) and open(post_start).read().strip())
