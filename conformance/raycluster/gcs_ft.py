"""What the GCS fault tolerance tests share: a detached counter actor, created in the Ray cluster and looked up
again after a failure, whose state must survive it."""
from __future__ import annotations

from rayconformance.testing.programs import program

ACTOR_NS = "rayconformance"


def counter_value(logs: str) -> int | None:
    for line in logs.splitlines():
        if line.startswith("COUNTER "):
            return int(line.split()[1])
    return None


# The lookup after a head loss reserves a CPU share for its driver, so that Ray places it on a node with CPUs (the
# worker: the head offers none) rather than on the head node the dashboard recorded. Ray 2.46 records the
# first head node it sees, which after a GCS restart from Redis can be the lost head, still listed alive (Ray 2.60
# records each new live head), and a job
# pinned there fails at once: "Job supervisor actor could not be scheduled ... NodeAffinitySchedulingStrategy"
# (Ray's dashboard node module; ray-project/ray#54791). The actor and its state are what the test looks at.
LOOKUP_CPUS = 0.1


def detached_actor_must_keep_its_state(cluster, what: str) -> None:
    """The detached counter actor, looked up again after `what`, answers its second increment with 2."""
    __tracebackhide__ = True
    try:
        logs = cluster.ray_job_must_succeed(program("gcs_ft_counter", ns=ACTOR_NS, create=False),
                                            entrypoint_num_cpus=LOOKUP_CPUS)
    except AssertionError as e:
        raise AssertionError(f"the detached actor of {cluster} must survive the {what} and keep its state "
                             f"(expected 2), but the job looking it up did not succeed: {e}") from None
    assert counter_value(logs) == 2, \
        f"the detached actor of {cluster} must keep its state across the {what} (expected 2), observed " \
        f"{counter_value(logs)}"


def create_counter(cluster) -> None:
    """The detached counter actor, created and incremented once."""
    __tracebackhide__ = True
    logs = cluster.ray_job_must_succeed(program("gcs_ft_counter", ns=ACTOR_NS, create=True))
    assert counter_value(logs) == 1, \
        f"first increment of the detached actor of {cluster} printed {counter_value(logs)}; logs: {logs[-500:]}"
