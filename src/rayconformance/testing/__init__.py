"""What a conformance test works through: `ctx` (context.py) with handles on its Ray resources (`handles/`), what
must hold (`expect/`), waiting (waiting.py) and watching (watch.py), the ray.io resources and Ray's APIs (ray.py,
ray_actors.py), the Ray programs of samples/programs/ a test runs as Ray jobs (programs.py), traffic through a Service
(traffic.py), the parameter axes a behavior runs over (axes.py: who owns a RayCluster, a RayJob's submission mode, the
autoscaler's version), the cluster specs copy tests write inside an owner (copied_specs.py) and the RayCronJob
jobTemplates holding them (copied_job_templates.py), the operator's events (events.py), a Gateway API implementation
(gateway.py) and KubeRay's own samples (kuberay_samples.py). The pytest fixtures that give a test its `ctx` are in
fixtures/ (rayconformance.fixtures)."""
