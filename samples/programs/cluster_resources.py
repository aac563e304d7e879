"""Connects to the Ray cluster and prints its resources."""
import ray; ray.init(); print(ray.cluster_resources())
