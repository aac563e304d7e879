"""The actor scripts the autoscaler tests submit: valid Python with single quotes only, and their ACTOR lines read
back."""
from __future__ import annotations

import pytest

from rayconformance.testing.ray_actors import ask_actors, create_actors, kill_actors, placed


@pytest.mark.parametrize("code", [
    create_actors(["a", "b"]),
    create_actors(["a", "b"], wait=30, ready=1),
    create_actors(["g"], {"g": "num_cpus=0, resources={'g': 1}"}, wait=30),
    ask_actors(["a"], 60),
    kill_actors(["a", "b"]),
])
def test_scripts_run_as_python_c(code):
    assert '"' not in code
    compile(code, "<ray job>", "exec")


def test_options_per_actor_and_waiting():
    code = create_actors(["a", "b"], {"a": "num_cpus=1", "b": "num_gpus=1"}, wait=30, ready=1)
    assert "name='a', lifetime='detached', num_cpus=1" in code and "name='b', lifetime='detached', num_gpus=1" in code
    assert "num_returns=1, timeout=30" in code
    assert "ray.wait" not in create_actors(["a"])


@pytest.mark.parametrize("wait", [None, 30])
def test_actor_handles_kept_while_the_driver_runs(wait):
    """Ray 2.46 fails a method called on a handle dropped before its actor exists ("Lost reference to actor")."""
    code = create_actors(["a", "b"], wait=wait)
    assert ".remote().where" not in code and "actors = [h.remote() for h in holders]" in code
    asked = ask_actors(["a"])
    assert ").where" not in asked and "actors = [ray.get_actor(n) for n in names]" in asked


def test_placed_reads_each_actor():
    logs = 'noise\nACTOR a {"ip": "10.0.0.5", "node_gpus": 1.0, "gpu_ids": ["0"]}\nACTOR b null\n'
    assert placed(logs) == {"a": {"ip": "10.0.0.5", "node_gpus": 1.0, "gpu_ids": ["0"]}, "b": None}
    with pytest.raises(AssertionError, match="printed no ACTOR line"):
        placed("nothing here")
