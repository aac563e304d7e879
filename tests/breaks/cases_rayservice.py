"""Break cases for the RayService conformance tests, and the saboteurs and sample mutations they use."""
from __future__ import annotations

import threading

from kubernetes import client

from rayconformance.testing.expect import rayservice
from tests.breaks.harness import (Case, namespace_created, until, service_ready, stop_operator_when,
                                   upgrade_pending)


def kill_active_head_during_upgrade(api: client.ApiClient, stop: threading.Event) -> bool:
    co, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    found: dict = {}

    def upgrading():
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayservices")["items"]:
            if rayservice.is_upgrading(o):
                found.update(ns=o["metadata"]["namespace"], active=rayservice.active_and_pending_clusters(o)[0])
                return True
        return False

    return until(stop, upgrading, 0.5) and until(stop, lambda: core.delete_collection_namespaced_pod(
        found["ns"], label_selector=f"ray.io/cluster={found['active']},ray.io/node-type=head",
        grace_period_seconds=0) is not None, 1.0)


BLACKOUT_S = 2.0


def blackout_after_the_old_cluster_goes(api: client.ApiClient, stop: threading.Event) -> bool:
    """Once a RayService has switched and its old RayCluster object is gone (its Pods still terminating), its serve
    Service routes to nothing for BLACKOUT_S: requests refused for 2 s after the switch, which a load generator that
    stopped when the old cluster went never saw."""
    co, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    first: dict = {}
    found: dict = {}

    def old_cluster_gone() -> bool:
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayservices")["items"]:
            key = (o["metadata"]["namespace"], o["metadata"]["name"])
            active = rayservice.active_and_pending_clusters(o)[0]
            if not active:
                continue
            old = first.setdefault(key, active)
            if active != old and not [c for c in co.list_namespaced_custom_object(
                    "ray.io", "v1", key[0], "rayclusters")["items"] if c["metadata"]["name"] == old]:
                found.update(ns=key[0], svc=f"{key[1]}-serve-svc")
                return True
        return False

    if not until(stop, old_cluster_gone, 0.2):
        return False
    selector = core.read_namespaced_service(found["svc"], found["ns"]).spec.selector or {}
    core.patch_namespaced_service(found["svc"], found["ns"], {"spec": {"selector": {
        **{k: None for k in selector}, "rayconformance.io/blackout": "yes"}}})
    stop.wait(BLACKOUT_S)
    core.patch_namespaced_service(found["svc"], found["ns"], {"spec": {"selector": {
        **selector, "rayconformance.io/blackout": None}}})
    return True


def serve_from_slow_head_without_ft(docs: list[dict]) -> None:
    """The FT RayService made fragile: no GCS fault tolerance, the Serve replica on the head, no workers, and a
    head that takes 20 s longer to start (so the pending cluster takes longer to take over)."""
    rs = next(d for d in docs if d["kind"] == "RayService")
    cfg = rs["spec"]["rayClusterConfig"]
    cfg.pop("gcsFaultToleranceOptions")
    cfg.pop("workerGroupSpecs")
    rs["spec"]["excludeHeadPodFromServeSvc"] = False
    head = cfg["headGroupSpec"]
    head["rayStartParams"]["num-cpus"] = "1"
    head["template"]["spec"]["initContainers"] = [{"name": "delay", "image": "busybox:1.36", "command": ["sleep", "20"]}]



CASES = [
    Case("serve_app_answers_through_serve_service", "Ready=True", saboteur=stop_operator_when(namespace_created)),
    # The operator replaces a serve Service older than 30 s instead of keeping it: a steady load sees it go.
    Case("steady_load_is_served_without_failures", r"must stay as they are .*(replaced|deleted)",
         patch="rayservice-serve-service-replaced"),
    Case("serve_config_change_applies_in_place", "answer", saboteur=stop_operator_when(service_ready)),
    # The operator restarts the head Pod after submitting a changed Serve config to a cluster that had one: the
    # update is not in place.
    Case("serve_config_change_applies_in_place", r"must be applied in place, creating and deleting no Pod; observed",
         patch="rayservice-serve-update-restarts-head"),
    # Once serviceStatus is Running the operator never clears it: it stays Running when Ready drops.
    Case("service_status_follows_ready_both_ways",
         r"serviceStatus 'Running' exactly when Ready=True .*serviceStatus='Running' with Ready=False/ZeroServeEndpoints",
         patch="rayservice-service-status-stays-running", timeout_scale=1.0),  # Serve drains the worker's proxy ~30 s
    # On a switch the operator moves only the head Service's ray.io/cluster key and keeps the old head's other
    # selector labels: the head Service selects no Pod.
    Case("head_service_follows_the_active_cluster", r"the head Service greeter-head-svc must route to exactly the head Pod",
         patch="rayservice-head-service-keeps-old-head-selector"),
    # The operator submits the Serve config to the active RayCluster even while it prepares a new one: the old
    # cluster answers with the new reply before the switch.
    Case("serve_config_and_cluster_spec_changed_together", r"may answer; observed answers .*'v2 from ",
         patch="rayservice-serve-config-to-active-during-upgrade", timeout_scale=0.5),  # the upgrade must complete
    Case("serve_config_changed_with_the_cluster_moves_with_the_traffic", r"not expected: \['v2 from ",
         patch="rayservice-serve-config-to-active-during-upgrade", timeout_scale=0.5),
    Case("new_cluster_upgrade_drops_no_request", "must not fail requests", saboteur=kill_active_head_during_upgrade),
    # Requests refused for 2 s after the switch, once the old RayCluster object is gone (its Pods terminating): the
    # window the load generator now keeps counting in (it used to stop as the old RayCluster went)
    Case("new_cluster_upgrade_drops_no_request", "must not fail requests",
         saboteur=blackout_after_the_old_cluster_goes, variant="blackout-after-the-old-cluster"),
    Case("pending_head_failure_does_not_break_upgrade", "switch|Serve applications on its pending",
         saboteur=stop_operator_when(upgrade_pending)),
    # The operator does not notice that a restarted head lost its Serve applications (no GCS FT), so it never
    # submits the config to the pending cluster again and the upgrade never completes.
    Case("pending_head_failure_does_not_break_upgrade", "switch", patch="rayservice-no-resubmit-after-head-loss"),
    # The operator gives up on a pending cluster whose head was lost and prepares another: the upgrade completes, on
    # a RayCluster that is not the one that was pending.
    Case("pending_head_failure_does_not_break_upgrade", "the upgrade must complete on the pending RayCluster",
         patch="rayservice-replaces-pending-cluster-on-head-loss"),
    Case("active_head_failure_with_gcs_ft_does_not_break_upgrade", "at most",
         samples={"rayservice-greeter-ft": serve_from_slow_head_without_ft}),
    # The operator reports UpgradeInProgress=False while a pending cluster exists.
    Case("upgrade_progress_shows_in_conditions", "UpgradeInProgress=False/BothActivePendingClustersExist",
         patch="rayservice-upgrade-not-in-progress"),
    # The operator switches the Services to the new cluster without recording UpdatedService.
    Case("upgrade_is_recorded_in_events", "missing .*UpdatedService", patch="rayservice-no-service-switch-event"),
    # The operator ignores the ray.io/initializing-timeout annotation: the RayService stays Initializing.
    Case("initializing_timeout_fails_a_service_that_never_starts", "Ready=False/InitializingTimeout",
         patch="rayservice-ignores-initializing-timeout"),
    # The operator gives up after a quarter of the configured initializing timeout (the end state is right; only the
    # watched moment shows it).
    Case("initializing_timeout_fails_a_service_that_never_starts", "must not fire before it has passed",
         patch="rayservice-initializing-timeout-fires-early"),
    # The annotation's whole-seconds form is read as milliseconds: a healthy RayService with "600" gives up at once.
    Case("healthy_service_is_not_failed_by_its_initializing_timeout", "must become Ready=True, not fail the timeout",
         patch="rayservice-initializing-timeout-seconds-as-milliseconds"),
    # The operator skips the spec validation and creates a cluster for an invalid RayService.
    Case("invalid_rayservice_fails_validation_and_creates_nothing[head-service-named]", "Ready=False/ValidationFailed",
         patch="rayservice-skips-spec-validation"),
    # ... and the metadata validation: a name too long for its RayClusters' names is taken
    Case("invalid_rayservice_fails_validation_and_creates_nothing[name-too-long]", "Ready=False/ValidationFailed",
         patch="rayservice-skips-metadata-validation"),
    # The operator counts worker-group replicas in the cluster hash: a replicas change needs a new cluster.
    Case("autoscaler_fields_and_new_worker_group_keep_the_cluster", "must not start an upgrade",
         patch="rayservice-replicas-change-upgrades"),
    # The operator writes the RayService's autoscaler-owned values into the running RayCluster (no new cluster).
    Case("autoscaler_fields_and_new_worker_group_keep_the_cluster", "must not reach its running RayCluster",
         patch="rayservice-pushes-autoscaler-fields"),
    # The CRD no longer has the deprecated thresholds: the API server prunes them.
    Case("deprecated_unhealthy_thresholds_change_nothing", "must keep both thresholds as given",
         patch="rayservice-crd-drops-unhealthy-thresholds"),
    # The operator updates the active RayCluster in place without recording it.
    Case("autoscaler_fields_and_new_worker_group_keep_the_cluster", "UpdatedRayCluster",
         patch="rayservice-cluster-update-unrecorded"),
    # The operator treats upgradeStrategy None as NewCluster.
    Case("upgrade_strategy_none_keeps_the_cluster", "must not start an upgrade", patch="rayservice-none-still-upgrades"),
    # Under upgradeStrategy None the operator writes a changed cluster spec into the running RayCluster.
    Case("upgrade_strategy_none_keeps_the_cluster", r"must be kept as it was .*observed generation",
         patch="rayservice-none-updates-the-cluster"),
    # The operator reads rayClusterDeletionDelaySeconds as milliseconds: the old cluster goes at once.
    Case("old_cluster_outlives_the_switch_by_the_deletion_delay", "to be kept for rayClusterDeletionDelaySeconds",
         patch="rayservice-deletion-delay-in-milliseconds"),
    # ... or as ten times its value: the old cluster is kept 300 s, not 30
    Case("old_cluster_outlives_the_switch_by_the_deletion_delay", "to be deleted once rayClusterDeletionDelaySeconds",
         patch="rayservice-deletion-delay-tenfold"),
    # The operator takes a RayCluster created by another KubeRay release for one with a different spec (it ignores
    # the ray.io/kuberay-version annotation that says so): after upgrading the operator from v1.5.1 it moves the
    # RayService to a new RayCluster.
    Case("operator_upgrade_keeps_serving[kuberay-v1.5.1]", r"must keep RayService .*observed: RayCluster \S+ created",
         patch="rayservice-recreates-cluster-after-operator-upgrade", timeout_scale=1.0),
    # The operator takes an active RayCluster whose head Pod is not ready for one to replace (as if GCS fault
    # tolerance could not keep it): losing the head starts an upgrade to a new RayCluster.
    Case("gcs_ft_head_loss_keeps_the_service_on_its_cluster", r"must stay on RayCluster \S+ with no pending one",
         patch="rayservice-replaces-cluster-on-head-loss", timeout_scale=0.5),
    # The operator's readiness probe for RayService workers no longer asks the worker's Serve proxy: a worker
    # whose proxy is gone stays in the serve Service.
    Case("serve_service_routes_only_to_healthy_proxies", r"route to exactly .*the worker runs no replica",
         patch="rayservice-worker-readiness-ignores-serve-proxy"),
    # The operator does not notice that the new head of its active RayCluster has no Serve application (no GCS FT),
    # so it never submits it again: the serve Service never answers from the new head.
    Case("head_loss_without_ft_redeploys_the_applications", r"the answer 'v1 from",
         patch="rayservice-no-resubmit-after-head-loss", timeout_scale=0.5),
    # A spec reverted during an incremental upgrade never starts a rollback.
    Case("reverting_the_spec_mid_upgrade_rolls_traffic_back", "must report RollbackInProgress=True",
         patch="rayservice-never-rolls-back"),
    # After the rollback the HTTPRoute keeps the deleted pending cluster's serve Service as a backend, at weight 0.
    Case("reverting_the_spec_mid_upgrade_rolls_traffic_back", r"to route to \S+ alone",
         patch="rayservice-rollback-keeps-pending-backend"),
    # The operator never checks clusterUpgradeOptions: each invalid option is accepted and a RayCluster created.
    *(Case(f"invalid_upgrade_options_are_rejected[{case}]", "Ready=False/ValidationFailed",
           patch="rayservice-skips-upgrade-options-validation") for case in ("surge-above-100", "zero-interval",
                                                                            "no-gateway-class")),
    # KubeRay v1.7.0 whose changed goal never starts a rollback (reconcileRollbackState returns at once)
    *(Case(f"changing_course_mid_upgrade_settles_on_the_last_spec[{case}]", "RollbackInProgress=True|must settle on",
           profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-rollback-never-starts")
      for case in ("BasicRollback", "EarlyRollback", "LateRollback", "FastRollback", "UnhealthyPendingCluster",
                   "ThirdSpec")),
    # ... and whose rollback, once started, is never canceled by re-applying the pending cluster's spec
    Case("changing_course_mid_upgrade_settles_on_the_last_spec[CancelRollback]", "the same new RayCluster",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-rollback-never-canceled"),
    # KubeRay v1.7.0 without its stepSizePercent <= maxSurgePercent check: the RayService is accepted and served
    Case("invalid_upgrade_options_are_rejected[step-above-surge]", "Ready=False/ValidationFailed",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-step-above-surge-accepted"),
    # KubeRay v1.7.0 patched (tests/breaks/patches/v1.7.0/, applied to a copy of the tree given in
    # RAYCONF_OPERATOR_TREE): a suspend leaves the RayService's Services behind
    *(Case(test, "no RayCluster or Service left", profile="kuberay-v1.7.0", local=True,
           tree_patch="v1.7.0/rayservice-suspend-keeps-services")
      for test in ("suspend_deletes_everything_and_resume_serves_again", "suspend_during_upgrade_removes_both_clusters",
                   "suspend_during_incremental_upgrade_removes_everything")),
    # once suspended, UpgradeInProgress and RollbackInProgress are removed instead of kept as False/SuspendComplete
    Case("suspend_deletes_everything_and_resume_serves_again", "must keep UpgradeInProgress as False/SuspendComplete",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-suspend-drops-upgrade-conditions"),
    # resuming does not reset Ready to Initializing
    Case("suspend_deletes_everything_and_resume_serves_again", "Ready=False/Initializing", profile="kuberay-v1.7.0",
         local=True, tree_patch="v1.7.0/rayservice-resume-keeps-ready"),
    # a RayService that never had a cluster is not suspended: created suspended, it starts like any other
    Case("created_suspended_creates_nothing_until_resumed", "no RayCluster may be created through",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-created-suspended-ignored"),
    # clearing spec.suspend abandons a suspend under way
    Case("suspend_runs_to_completion_once_committed", "must stay Suspending=True", profile="kuberay-v1.7.0",
         local=True, tree_patch="v1.7.0/rayservice-suspend-not-atomic"),
    # spec.managedBy not looked at: the operator serves a RayService another controller manages
    Case("rayservice_managed_elsewhere_is_left_alone", "left alone", patch="rayservice-ignores-managed-by"),
    # the RayService's RayCluster made without enableInTreeAutoscaling: Serve's second replica never gets a worker
    Case("load_scales_replicas_and_workers_up_and_back", "second replica under load",
         patch="rayservice-cluster-drops-autoscaling"),
    # rayservice helper
    # A spec change lifts the InitializingTimeout failure (the terminal check compares the condition's generation):
    # the fixed RayService gets a new RayCluster.
    Case("initializing_timeout_fails_a_service_that_never_starts", "must stay failed after its spec was fixed",
         patch="rayservice-spec-change-lifts-initializing-timeout"),
    # The GCS crash makes the head Pod not ready for a while, and the patched operator replaces the RayCluster for it.
    Case("gcs_crash_in_the_head_keeps_serving_without_failures", r"must stay on RayCluster \S+ with no pending one",
         patch="rayservice-replaces-cluster-on-head-loss", timeout_scale=0.5),
    # Once labeled ray.io/serve=true, a head keeps the label though its Serve proxy stops answering.
    Case("old_head_proxy_failure_during_upgrade_moves_serving_to_the_new_head", r"labeled ray.io/serve='false'",
         patch="rayservice-head-keeps-serve-label-when-proxy-fails"),
    # Without the feature gate the operator refuses incremental upgrades: the RayService never gets Ready.
    *(Case(f"traffic_shifts_in_steps_without_failures[{options}]", "Gateway|Ready=True",
           gates={"RayServiceIncrementalUpgrade": False})
      for options in ("BlueGreen", "AggressiveGradual", "ConservativeGradual")),
    # intervalSeconds read as milliseconds: traffic moves a step on every pass, not every 5 s.
    Case("traffic_shifts_in_steps_without_failures[AggressiveGradual]", "traffic moved faster than every 5s",
         patch="rayservice-incremental-interval-in-milliseconds", timeout_scale=1.0),
    # rayservice fields helper (spec.serveService, rayClusterConfig fields a RayService treats its own way)
    # The operator ignores spec.serveService: the default serve Service, with the head's port, is made instead.
    Case("custom_serve_service_keeps_its_name_type_and_metadata", r"Service greeter-front .*no such Service",
         patch="rayservice-serve-service-ignored"),
    Case("serve_port_and_service_type_come_from_the_rayservice", r"port serve is .*expected port 80",
         patch="rayservice-serve-service-ignored"),
    # KubeRay v1.7.0 whose cluster hash keeps rayClusterConfig.suspend: a change after the cluster exists makes a
    # new RayCluster
    Case("cluster_suspend_is_set_only_at_creation", "must not start an upgrade", profile="kuberay-v1.7.0", local=True,
         tree_patch="v1.7.0/rayservice-cluster-suspend-in-hash"),
    # The RayCluster controller lets a RayService's cluster take an upgradeStrategy (only a RayJob's is refused).
    Case("cluster_upgrade_strategy_is_refused_for_a_rayservice", "a Warning event about upgradeStrategy",
         patch="rayservice-cluster-upgrade-strategy-accepted"),
    # The RayService validation no longer refuses Kubernetes token authentication ...
    Case("cluster_config_refused_for_a_rayservice[k8s-token-auth]", "Ready=False/ValidationFailed",
         patch="rayservice-k8s-token-auth-accepted"),
    # ... or checks the cluster config against the RayService's own annotations (the RayCluster's check, on the
    # copied annotations, is left)
    *(Case(f"cluster_config_refused_for_a_rayservice[{case}]", "Ready=False/ValidationFailed",
           patch="rayservice-annotations-not-validated")
      for case in ("ft-annotation-with-ft-options", "storage-namespace-annotation-with-ft-options")),
    # ... or applies the RayCluster checks to rayClusterConfig (its RayCluster is still refused, later, by the
    # RayCluster controller: the RayService never reports ValidationFailed)
    *(Case(f"start_params_refused_for_a_rayservice[{case}]", "Ready=False/ValidationFailed",
           patch="rayservice-cluster-spec-not-validated")
      for case in ("head-labels-in-start-params", "worker-labels-in-start-params", "head-redis-username")),
    # authOptions.secretName ignored: the cluster runs on a token Secret of the operator's, the user's is refused
    Case("rayservice_serves_with_the_token_of_its_secret", r"answer a request with the token of Secret greeter-token",
         patch="raycluster-auth-secret-name-ignored"),
    # copies helper (conformance/rayservice/test_cluster_config_copy.py): KubeRay v1.7.0 patched to make the
    # RayService's RayCluster from its rayClusterConfig with the worker groups' Pod template labels dropped, which
    # every case sets
    *(Case(f"cluster_config_reaches_its_raycluster_unchanged[{case}]",
           r"spec\.workerGroupSpecs\[0\]\.template\.metadata(\.labels)?: expected",
           profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayservice-cluster-config-loses-worker-pod-labels")
      for case in ("every-release", "credentials-from-secret", "groups-auth-suspend", "v1.7-options",
                   "v1.7-store-claim")),
]
