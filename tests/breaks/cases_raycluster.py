"""Break cases for the RayCluster conformance tests."""
from __future__ import annotations

from tests.breaks.harness import Case, set_field, provisioned, stop_operator_when, namespace_created

CASES = [
    Case("head_and_workers_provisioned", "RayClusterProvisioned=True", gates={"RayClusterStatusConditions": False}),
    # an operator that reports RayClusterProvisioned as soon as the head is ready, before the workers are
    Case("head_and_workers_provisioned", r"Running\+Ready worker", patch="raycluster-provisioned-before-workers"),
    Case("suspend_and_resume", "RayClusterProvisioned=True", gates={"RayClusterStatusConditions": False}),
    # status.state turns ready as soon as the head Pod is ready, before the workers (and RayClusterProvisioned)
    Case("head_and_workers_provisioned", "must report state ready only once RayClusterProvisioned is True",
         patch="raycluster-state-ready-with-the-head"),
    # RayClusterSuspended reported once every Pod is marked for deletion, while they are still stopping
    Case("suspend_and_resume", "RayClusterSuspended=True only once its Pods have stopped",
         patch="raycluster-suspended-while-pods-stop"),
    Case("manual_scale_up_and_down", "scale up to 2", saboteur=stop_operator_when(provisioned)),
    Case("delete_cleans_redis_and_removes_cluster", "DBSIZE|must carry the finalizer", env={"ENABLE_GCS_FT_REDIS_CLEANUP": "false"}),
    Case("detached_actor_survives_head_pod_deletion", "keep its state",
         samples={"raycluster-gcs-ft": set_field(["spec", "gcsFaultToleranceOptions"], None)}),
    # without GCS fault tolerance the restarted GCS starts empty: the detached actor is gone
    Case("gcs_crash_inside_head_keeps_detached_actor", "keep its state|worker Pods must stay",
         samples={"raycluster-gcs-ft": set_field(["spec", "gcsFaultToleranceOptions"], None)}),
    Case("invalid_configuration_gets_warning_event", "Warning event", saboteur=stop_operator_when(namespace_created)),
    # (v1 is claimed from v1.7.0 on: earlier releases run Ray's default, v2, when v1 is asked)
    Case("demand_scales_workers_up_and_idle_down[v1]", "autoscaler", profile="kuberay-v1.7.0", local=True,
         samples={"raycluster-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)}),
    Case("demand_scales_workers_up_and_idle_down[v2]", "autoscaler",
         samples={"raycluster-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)}),
    # as if the operator did not derive `--num-gpus` from the container's nvidia.com/gpu limit
    Case("gpu_worker_group_gets_a_gpu", "must count the worker's GPU",
         samples={"raycluster-gpu": set_field(["spec", "workerGroupSpecs", 0, "rayStartParams", "num-gpus"], "0")},
         timeout_scale=0.6),  # the probe job itself waits up to 3 minutes for a GPU
    # without in-tree autoscaling nobody scales the GPU group from zero
    Case("gpu_group_scales_from_zero_and_back", "not placed within",
         samples={"raycluster-gpu-autoscale": set_field(["spec", "enableInTreeAutoscaling"], False)}, timeout_scale=0.5),
    # patched operators (tests/breaks/patches/<patch>.patch against KubeRay v1.6.1) doing the wrong thing:
    # a Pod creation refused by a quota is not reported as ReplicaFailure
    Case("pod_quota_reports_replica_failure_until_lifted", "ReplicaFailure=True/FailedCreateHeadPod",
         patch="raycluster-no-replica-failure"),
    # RayClusterProvisioned follows the Pods' readiness after the first time (turns False while the head is replaced)
    Case("head_pod_loss_turns_head_pod_ready_false[user]", "RayClusterProvisioned must stay True",
         patch="raycluster-provisioned-follows-pods"),
    Case("head_pod_loss_turns_head_pod_ready_false[RayService]", "RayClusterProvisioned must stay True",
         patch="raycluster-provisioned-follows-pods"),
    Case("head_pod_loss_turns_head_pod_ready_false[RayJob]", "RayClusterProvisioned must stay True",
         patch="raycluster-provisioned-follows-pods"),
    # once provisioned, no RayCluster gets a new worker Pod for a lost one
    Case("lost_worker_pod_is_replaced[user]", "to be replaced", patch="raycluster-lost-workers-stay-lost"),
    # a RayCluster a RayJob or a RayService made gets no new worker Pod for a lost one once provisioned (a user's does)
    Case("lost_worker_pod_is_replaced[RayJob]", "to be replaced", patch="raycluster-owned-cluster-keeps-lost-workers-lost"),
    Case("lost_worker_pod_is_replaced[RayService]", "to be replaced",
         patch="raycluster-owned-cluster-keeps-lost-workers-lost"),
    # HeadPodReady keeps the Pod's generic ContainersNotReady, not the head container's own waiting reason
    Case("unpullable_head_image_is_named_in_head_pod_ready", "HeadPodReady=False with reason ErrImageNeverPull",
         patch="raycluster-head-ready-reason-generic"),
    # every worker group gets one Pod more than its replicas
    Case("scaling_creates_no_redundant_pods", "expected at most 6 live worker Pods",
         patch="raycluster-one-worker-too-many"),
    # a worker Pod held in Terminating counts as gone for the scale expectation but as a replica for the count: the
    # operator deletes the other worker as well
    Case("scaling_down_deletes_one_worker_while_it_lingers", "must mark exactly one worker for deletion",
         patch="raycluster-lingering-pod-counted-as-replica"),
    # workersToDelete deletes another worker of the group instead of the named one
    Case("workers_to_delete_removes_exactly_the_named_pod", r"workersToDelete=\[.*\] with replicas 2 to delete exactly",
         patch="raycluster-delete-wrong-worker"),
    # spec.managedBy is ignored: the operator reconciles a cluster another controller manages
    Case("cluster_managed_by_another_controller_is_left_alone", "must get no (Pods|Services|status)",
         patch="raycluster-ignore-managed-by"),
    # upgradeStrategy Recreate recreates only the head Pod, the workers keep the old template
    Case("recreate_replaces_all_pods_on_template_change", "must replace every Pod|the worker to be recreated",
         patch="raycluster-recreate-head-only"),
    # RAY_REDIS_ADDRESS without gcsFaultToleranceOptions passes validation (Pods are created)
    Case("redis_address_without_fault_tolerance_options_is_invalid", "Warning event about RAY_REDIS_ADDRESS",
         patch="raycluster-redis-address-unchecked"),
    # the deprecated ray.io/ft-enabled annotation no longer enables GCS fault tolerance
    *(Case(f"deprecated_annotation_enables_fault_tolerance[{form}]", "to be provisioned|ft-enabled=true",
           patch="raycluster-ft-annotation-ignored")
      for form in ("no-password", "password-in-start-params", "password-from-env", "storage-namespace-annotation")),
    # the Redis cleanup finalizer is removed as soon as the cleanup Job is created, not once it has completed
    Case("delete_cleans_redis_and_removes_cluster", "must stay until its Redis cleanup Job has completed",
         patch="raycluster-finalizer-before-cleanup"),
    # the operator replaces a head Pod whose Ray container restarted (instead of letting it restart in place)
    Case("gcs_crash_inside_head_keeps_detached_actor", "restart inside the same head Pod",
         patch="raycluster-replaces-restarted-head"),
    # KubeRay v1.7.0 patched: autoscalerOptions.version v1 no longer sets RAY_enable_autoscaler_v2=false on the head
    # (as v1.6.x and earlier), so Ray's own default runs: with Ray 2.60 that is autoscaler v2
    Case("demand_scales_workers_up_and_idle_down[v1]", "autoscaler v1 must run", profile="kuberay-v1.7.0", local=True,
         tree_patch="v1.7.0/raycluster-autoscaler-v1-not-pinned"),
    # the same under every other autoscaler test: each v1 case checks which autoscaler runs once it has acted
    *(Case(f"{test}[v1]", "autoscaler v1 must run", profile="kuberay-v1.7.0", local=True,
           tree_patch="v1.7.0/raycluster-autoscaler-v1-not-pinned")
      for test in ("workers_follow_actors_one_at_a_time", "fake_gpu_group_scales_for_gpu_demand",
                   "cpu_demand_uses_the_gpu_group_when_no_other_fits",
                   "idle_worker_needed_by_pending_placement_group_is_kept",
                   "autoscaling_continues_after_head_pod_replaced", "placement_group_scales_workers_and_keeps_them",
                   "max_replicas_changed_under_demand", "worker_group_added_while_running")),
    # autoscalerOptions.version v2 runs autoscaler v1 (RAY_enable_autoscaler_v2=false on the head)
    Case("demand_scales_workers_up_and_idle_down[v2]", "autoscaler v2 must run",
         patch="raycluster-autoscaler-v2-runs-v1"),
    # the operator's CRD lacks workerGroupSpecs[].idleTimeoutSeconds and autoscalerOptions.upscalingMode: the API
    # server prunes both, so Ray's autoscaler never sees them (the group idles out after the cluster's 600 s; the
    # upscaling mode is Default, all at once)
    Case("group_idle_timeout_overrides_the_cluster_one", "group quick's idle worker to be removed",
         patch="raycluster-crd-drops-autoscaler-tuning"),
    Case("upscaling_mode_paces_new_workers[Conservative]", "first batch .* must be at most 5",
         patch="raycluster-crd-drops-autoscaler-tuning"),
    # the operator starts the autoscaler with AUTOSCALER_MAX_CONCURRENT_LAUNCHES=1: one launch in flight at most,
    # whatever upscalingMode says
    Case("upscaling_mode_paces_new_workers[Aggressive]", "must add all 7 workers the demand needs at once",
         patch="raycluster-autoscaler-launches-one-at-a-time"),
    # the operator creates at most 5 Pods per worker group, whatever its replicas: Conservative's first batch fits,
    # the rest of the demand never comes
    Case("upscaling_mode_paces_new_workers[Conservative]", "to bring up all 7 workers the demand needs",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-group-pods-capped-at-five"),
    Case("upscaling_mode_paces_new_workers[Conservative-v1]", "to bring up all 7 workers the demand needs",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-group-pods-capped-at-five"),
    Case("upscaling_mode_paces_new_workers[Conservative-v1]", "autoscaler v1 must run", profile="kuberay-v1.7.0",
         local=True, tree_patch="v1.7.0/raycluster-autoscaler-v1-not-pinned"),
    # token auth: the Secret is created but the Ray containers get no RAY_AUTH_MODE/RAY_AUTH_TOKEN, so Ray runs
    # without auth and its dashboard accepts anyone (scale 0.6: the cluster must still get provisioned in time)
    Case("token_auth_guards_the_dashboard", "must refuse a request without the token",
         patch="raycluster-token-auth-not-wired", timeout_scale=0.6),
    # enableK8sTokenAuth ignored: the operator runs the cluster on a token Secret of its own, and Ray refuses the
    # Kubernetes token of a user allowed ray:write
    Case("kubernetes_identities_with_ray_write_get_in", "to list 2 alive node",
         patch="raycluster-k8s-token-auth-ignored", timeout_scale=0.6),
    # token auth: the RayJob's submitter gets no token, so `ray job submit` is refused. K8sJobMode: the submitter
    # Job fails and so does the RayJob. SidecarMode: the head's submitter container exits with an error, so the head
    # Pod is never Ready and the cluster is never provisioned
    Case("rayjob_succeeds_with_token_auth[K8sJobMode]", "jobStatus=SUCCEEDED", patch="rayjob-submitter-without-token",
         timeout_scale=0.6),
    Case("rayjob_succeeds_with_token_auth[SidecarMode]", "to be provisioned .*HeadPodReady=False",
         patch="rayjob-submitter-without-token", timeout_scale=0.6),
    # token auth, HTTPMode: the operator's dashboard client sends no token, so it cannot submit the job
    Case("rayjob_succeeds_with_token_auth[HTTPMode]", "jobStatus=SUCCEEDED",
         patch="rayservice-dashboard-client-without-token", timeout_scale=0.6),
    # token auth: the operator's dashboard client sends no token, so it cannot deploy the Serve application
    Case("rayservice_serves_with_token_auth", "Ready=True", patch="rayservice-dashboard-client-without-token"),
    # the operator no longer passes a container's nvidia.com/gpu limit to `ray start --num-gpus`: the autoscaler
    # brings up a GPU Pod whose Ray node offers no GPU, so the GPU actor is never placed
    Case("gpu_group_scales_from_zero_and_back", "not placed within", patch="raycluster-gpu-limit-not-passed-to-ray",
         timeout_scale=0.5),
    # KubeRay v1.7.0 patched (tests/breaks/patches/v1.7.0/, applied to a copy of the tree given in
    # RAYCONF_OPERATOR_TREE): the operator's RayCluster CRD lacks workerGroupSpecs[].priority, so the API server
    # prunes it and Ray's autoscaler v2 sees every group at priority 0: the tie goes to the group listed first
    Case("higher_priority_group_gets_the_new_worker", "must take the new worker from group preferred",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-crd-drops-priority", timeout_scale=0.5),
    # the head gets the embedded store's volume and RAY_gcs_storage_path but not RAY_gcs_storage=rocksdb: Ray keeps
    # the GCS in memory, so the new head starts empty and the detached actor is gone
    Case("embedded_store_keeps_detached_actor_across_head_loss", "keep its state|worker Pod should have stayed",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-embedded-gcs-not-selected",
         timeout_scale=0.5),
    # the embedded store's claim always asks for KubeRay's default size (1Gi), whatever storage.size says
    Case("embedded_store_keeps_detached_actor_across_head_loss", "must ask for the spec's size",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-gcs-store-size-ignored"),
    # include-log-monitor is no longer one of the options rendered with their true/false value (as before KubeRay
    # 1.7): its "false" is dropped, and the log monitor keeps running on every node
    Case("start_params_reach_ray_start_with_their_values", r"expected \['--include-log-monitor=false'\]",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-start-param-false-dropped"),
    # GCS fault tolerance options (KubeRay v1.6.1 patched): redisUsername is not passed to Ray (no REDIS_USERNAME,
    # no --redis-username), so the head sends the ACL user's password as the default user's and Redis refuses it
    Case("fault_tolerance_options_keep_state_and_clean_up[acl-user]", "to be provisioned|keep its state",
         patch="raycluster-redis-username-dropped", timeout_scale=0.5),
    # redisUsername.valueFrom dropped (only its inline value reaches REDIS_USERNAME): the head logs in to Redis with
    # an empty user name, the ACL user's password is refused, and the head never gets ready
    Case("acl_user_named_in_a_secret_keeps_and_cleans_state[acl-user-from-secret]", "to be provisioned",
         patch="raycluster-redis-username-from-secret-dropped", timeout_scale=0.5),
    # GCS fault tolerance option forms mishandled (one patch, one wrong decision per form): a missing redisPassword
    # filled with Ray's old default password, an inline redisPassword value dropped (the head sends no password), the
    # Redis cleanup Job named <cluster>-redis-cleanup uncut (refused above 63 characters: the cluster never goes),
    # a password in the deprecated path's rayStartParams not handed to the cleanup Job (its keys stay)
    Case("fault_tolerance_options_keep_state_and_clean_up[no-password]", "to be provisioned",
         patch="raycluster-gcs-ft-option-forms-mishandled", timeout_scale=0.5),
    Case("fault_tolerance_options_keep_state_and_clean_up[inline-password]", "to be provisioned",
         patch="raycluster-gcs-ft-option-forms-mishandled", timeout_scale=0.5),
    Case("fault_tolerance_options_keep_state_and_clean_up[long-name]", "to be gone after",
         patch="raycluster-gcs-ft-option-forms-mishandled", timeout_scale=0.5),
    Case("deprecated_annotation_enables_fault_tolerance[password-in-start-params]",
         "no key of storage namespace .* left in Redis|to be gone",
         patch="raycluster-gcs-ft-option-forms-mishandled"),
    # externalStorageNamespace is ignored: the head keeps the RayCluster's UID as its storage namespace
    Case("fault_tolerance_options_keep_state_and_clean_up[storage-namespace]",
         "annotated ray.io/external-storage-namespace=conformance-gcs-store",
         patch="raycluster-storage-namespace-option-ignored", timeout_scale=0.5),
    # the Redis cleanup Job prefixes redis:// to an address that already is a URL, cannot parse it and fails: the
    # finalizer goes anyway and the cluster's keys stay in Redis
    Case("fault_tolerance_options_keep_state_and_clean_up[redis-url]", "no key of storage namespace .* left in Redis",
         patch="raycluster-cleanup-misreads-redis-url", timeout_scale=0.5),
    # the default storage namespace is the Kubernetes namespace, not the RayCluster's UID: two clusters in one
    # namespace share their storage in Redis
    Case("clusters_on_one_redis_keep_their_own_storage", "its own RayCluster's UID",
         patch="raycluster-storage-namespace-shared", timeout_scale=0.5),
    # the CPU group's workers offer Ray no CPU: CPU demand can only go to the GPU group (or nowhere)
    Case("cpu_demand_scales_the_cpu_group_not_the_gpu_one",
         "must run on the CPU group.s worker|worker of the CPU group|no worker of the GPU group",
         samples={"raycluster-gpu-autoscale": set_field(["spec", "workerGroupSpecs", 0, "rayStartParams", "num-cpus"],
                                                         "0")},
         timeout_scale=0.5),
    # multihost helper
    # a replaced single-host worker, or a new one, takes the index after the highest in use, never a freed one
    Case("single_host_replicas_keep_their_index", r"carry ray.io/worker-group-replica-index \[0, 1, 2\]",
         patch="raycluster-replica-index-not-reused", timeout_scale=0.5),
    # a slice that lost one of its Pods is kept as it is (counted whole): the rest of it is not deleted, nothing
    # is recreated
    Case("multi_host_replicas_come_and_go_as_whole_slices", r"slice \d to be recreated after its Pod",
         patch="raycluster-incomplete-slice-kept", timeout_scale=0.5),
    Case("multi_host_tpu_slice_hosts_get_their_chips", "the TPU slice to be recreated",
         patch="raycluster-incomplete-slice-kept", timeout_scale=0.5),
    # without in-tree autoscaling nobody scales the slice group for the TPU demand
    Case("autoscaler_adds_and_removes_whole_slices", "one replica of demand",
         samples={"raycluster-multi-host-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)},
         timeout_scale=0.5),
    *(Case(f"slices_follow_demand_and_max_replicas[{version}-{hosts}]", "one replica of demand",
           samples={"raycluster-multi-host-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)},
           timeout_scale=0.5, **({"profile": "kuberay-v1.7.0", "local": True} if version == "v1" else {}))
      for version in ("v1", "v2") for hosts in (1, 4)),
    # autoscaler helper
    # without in-tree autoscaling nobody scales for the placement group, the capped demand or the first group's
    # CPU actor (autoscaler v1: run on KubeRay v1.7.0, which pins it)
    *(Case(f"{test}[{v}]", expect,
           samples={"raycluster-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)},
           **({"profile": "kuberay-v1.7.0", "local": True} if v == "v1" else {}))
      for test, expect in (
          ("placement_group_scales_workers_and_keeps_them", "placement group of 2 STRICT_SPREAD bundles"),
          ("max_replicas_changed_under_demand", "maxReplicas=2"),
          ("worker_group_added_while_running", "a CPU actor to bring up a worker of group small"))
      for v in ("v1", "v2")),
    # every group capped by the last group's maxReplicas: once a group of maxReplicas 1 is added, the first group
    # cannot grow to 2 (the autoscaler sets replicas 2, the operator keeps 1 Pod)
    Case("worker_group_added_while_running[v2]", "take group small up to 2 workers after a group was added",
         patch="raycluster-groups-capped-by-last-group-max", timeout_scale=0.5),
    # a group with a minReplicas is held at it: demand cannot take it above the raised minimum
    Case("demand_scales_workers_up_and_idle_down[v2]", "take the group above its raised minReplicas=1",
         patch="raycluster-group-held-at-min-replicas", timeout_scale=0.5),
    # workersToDelete deletes another worker than the named one: the autoscaler names the idle worker, the operator
    # deletes the one still running an actor
    Case("workers_follow_actors_one_at_a_time[v2]", "to be deleted and .* to stay",
         patch="raycluster-delete-wrong-worker", timeout_scale=0.5),
    # rayStartParams num-gpus not passed to `ray start`: the fake GPU worker offers Ray no GPU, the actor is not placed
    Case("fake_gpu_group_scales_for_gpu_demand[v2]", "was not placed within",
         patch="raycluster-num-gpus-param-dropped", timeout_scale=0.5),
    # the GPU group offers no CPU: a CPU-only actor has nowhere to go
    Case("cpu_demand_uses_the_gpu_group_when_no_other_fits[v2]", "was not placed within",
         samples={"raycluster-autoscaler-fake-gpu": set_field(
             ["spec", "workerGroupSpecs", 0, "rayStartParams", "num-cpus"], "0")}, timeout_scale=0.5),
    # a scale-up replaces the group's worker older than 20 s: the idle worker the pending placement group needs is
    # deleted when the second one is added
    Case("idle_worker_needed_by_pending_placement_group_is_kept[v2]", "must be kept while the second worker starts",
         patch="raycluster-scale-up-replaces-old-worker", timeout_scale=0.5),
    # autoscaler v1 (run on KubeRay v1.7.0, which pins it): the group capped at one worker, the second actor gets none
    Case("workers_follow_actors_one_at_a_time[v1]", "actor holder-1 must run on a worker Pod",
         profile="kuberay-v1.7.0", local=True,
         samples={"raycluster-autoscaler": set_field(["spec", "workerGroupSpecs", 0, "maxReplicas"], 1)}),
    # autoscaler v1: rayStartParams num-gpus not passed to `ray start` (the sample's num-gpus stays 1: the test checks
    # it first), or the group offers no CPU (num-cpus 0): the actor has nowhere to go
    Case("fake_gpu_group_scales_for_gpu_demand[v1]", "was not placed within", profile="kuberay-v1.7.0", local=True,
         tree_patch="v1.7.0/raycluster-num-gpus-param-dropped", timeout_scale=0.5),
    Case("cpu_demand_uses_the_gpu_group_when_no_other_fits[v1]", "was not placed within", profile="kuberay-v1.7.0",
         local=True, samples={"raycluster-autoscaler-fake-gpu": set_field(
             ["spec", "workerGroupSpecs", 0, "rayStartParams", "num-cpus"], "0")}, timeout_scale=0.5),
    Case("idle_worker_needed_by_pending_placement_group_is_kept[v1]", "must bring up a worker and be placed",
         profile="kuberay-v1.7.0", local=True,
         samples={"raycluster-autoscaler": set_field(["spec", "enableInTreeAutoscaling"], False)}),
    # autoscaler v1 with GCS FT: without in-tree autoscaling nothing brings up a worker for the actor
    Case("autoscaling_continues_after_head_pod_replaced[v1]", "must run on a worker the autoscaler brings up",
         profile="kuberay-v1.7.0", local=True,
         samples={"raycluster-autoscaler-gcs-ft": set_field(["spec", "enableInTreeAutoscaling"], False)},
         timeout_scale=0.5),
    # a replacement head Pod is created without the autoscaler sidecar: nothing scales after the head is replaced
    Case("autoscaling_continues_after_head_pod_replaced[v2]",
         "the new head Pod of RayCluster .* to run Ray's autoscaler|after the head Pod was replaced",
         patch="raycluster-new-head-without-autoscaler", timeout_scale=0.5),
    # an autoscaling cluster's deletion leaves its Redis storage as it is (the finalizer removed, no cleanup Job)
    Case("autoscaling_continues_after_head_pod_replaced[v2]", "DBSIZE is [1-9]",
         patch="raycluster-autoscaling-cluster-redis-not-cleaned", timeout_scale=0.5),
    # raycluster-options helper (autoscaler sidecar, annotations, v1.7.0 alpha blocks)
    # autoscalerOptions beyond the version are not merged into the sidecar (no env, mounts, securityContext, image...)
    Case("autoscaler_sidecar_takes_its_options", "to run Ray's autoscaler in a container carrying",
         patch="raycluster-autoscaler-options-not-merged"),
    Case("autoscaler_sidecar_runs_the_named_image", "to run Ray's autoscaler in a container carrying",
         patch="raycluster-autoscaler-options-not-merged"),
    # autoscalerOptions command and args ignored: the sidecar runs KubeRay's own command
    Case("autoscaler_sidecar_runs_its_command_and_args", "to run Ray's autoscaler in a container carrying",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-autoscaler-command-args-ignored"),
    # a worker group's own networkPolicy rules are ignored: every group gets the workers' rules
    Case("network_policies_follow_the_spec", "lacks the spec's rule|which is not this group's",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-network-policy-group-rules-ignored"),
    # the history collector is added to the head Pod only, not to the workers
    Case("collector_beside_every_ray_container", "no container of image busybox",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-history-collector-on-head-only"),
    # mutual TLS (KubeRay v1.7.0 with its RayClusterMTLS gate: profile kuberay-v1.7.0-mtls): the Ray containers get
    # RAY_USE_TLS=0 beside the certificate paths, so Ray runs without TLS though its certificates are mounted
    Case("tls_cluster_gets_its_pki_and_runs_over_tls", r"RAY_USE_TLS='1' \(observed '0'\)",
         profile="kuberay-v1.7.0-mtls", local=True, tree_patch="v1.7.0/raycluster-tls-switched-off-in-pods"),
    # the Secrets cert-manager issues are never made the Certificates' own: they outlive the deleted cluster
    Case("tls_pki_goes_with_the_cluster", "still there: .*Secret ray-head-secret",
         profile="kuberay-v1.7.0-mtls", local=True, tree_patch="v1.7.0/raycluster-tls-secrets-not-owned"),
    # tlsOptions present counts as TLS on, whatever enabled says: a cluster with enabled false gets the PKI
    Case("tls_disabled_leaves_no_tls_parts", "tlsOptions.enabled false .*observed: Issuer ray-selfsigned-issuer",
         profile="kuberay-v1.7.0-mtls", local=True, tree_patch="v1.7.0/raycluster-tls-enabled-false-ignored"),
    # the autoscaler sidecar gets no TLS settings (it cannot reach the GCS that speaks TLS)
    Case("tls_reaches_every_group_the_autoscaler_and_the_gcs_wait", "the autoscaler sidecar: expected autoscaler: "
         "RAY_USE_TLS='1'", profile="kuberay-v1.7.0-mtls", local=True,
         tree_patch="v1.7.0/raycluster-tls-not-in-autoscaler"),
    # the workers' wait-gcs-ready init container gets no TLS settings (it probes the GCS in plain text, forever)
    Case("tls_reaches_every_group_the_autoscaler_and_the_gcs_wait", "init containers waiting for the GCS: expected "
         "wait-gcs-ready: RAY_USE_TLS='1'", profile="kuberay-v1.7.0-mtls", local=True,
         tree_patch="v1.7.0/raycluster-tls-not-in-gcs-wait"),
    # ray.io/overwrite-container-cmd ignored: the operator puts its own `ray start` after the container's command
    Case("annotations_own_command_and_serve_service", "must run the template's command and args as given",
         patch="raycluster-own-command-replaced"),
    # ray.io/enable-serve-service ignored: no serve Service for the annotated cluster
    Case("annotations_own_command_and_serve_service", "a serve Service owned by RayCluster",
         patch="raycluster-serve-service-not-created"),
    # ray.io/disable-provisioned-head-restart ignored: a provisioned cluster's lost head is recreated
    Case("no_new_head_once_provisioned", "no new head Pod", patch="raycluster-provisioned-head-restarted"),
    # ray.io/gcs-ft-deletion-timeout ignored: a stuck Redis cleanup holds the deleted cluster the default 5 minutes
    Case("stuck_redis_cleanup_gives_up_after_the_deletion_timeout", "to be gone once",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-gcs-ft-deletion-timeout-ignored"),
    # storage.deletionPolicy Retain ignored: the store's claim is owned by its cluster (and goes with it)
    Case("retained_store_claim_carries_the_gcs_data_to_another_cluster", "must not own its store's claim",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-gcs-store-retain-ignored"),
    # authOptions.secretName ignored: the operator makes and wires a token Secret of its own, the user's is refused
    Case("token_comes_from_the_users_secret", "alive node", patch="raycluster-auth-secret-name-ignored"),
    # head groups and head Service (run-fields-rc1)
    # spec.headGroupSpec.serviceType ignored: the head Service takes the default type
    Case("head_service_takes_the_users_type_name_annotations_and_ports", "must take spec.headGroupSpec.serviceType",
         patch="raycluster-head-service-type-ignored"),
    # the operator's option for a ClusterIP head Service: the default head Service is no longer headless
    Case("default_head_service_is_headless_with_rays_ports", "must be headless",
         env={"ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "true"}),
    # the Ingress sends the dashboard to Ray's default port, not the head container's port named dashboard
    Case("enable_ingress_routes_to_the_head_dashboard", "one Ingress owned by RayCluster .* routing as",
         patch="raycluster-ingress-to-default-dashboard-port"),
    # changed ingressOptions never reach the existing Ingress
    Case("ingress_options_shape_the_rule_and_follow_changes", "ingressOptions changed on the running cluster",
         profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/raycluster-ingress-not-updated"),
    # a group's resources field ignored: Ray's nodes offer what rayStartParams and the containers give
    Case("group_resources_and_labels_reach_ray_and_pods", "the groups' resources and labels",
         patch="raycluster-group-resources-ignored"),
    *(Case(f"group_settings_act_in_an_owned_cluster[{owner}]", "the groups' resources and labels",
           patch="raycluster-group-resources-ignored") for owner in ("RayJob", "RayService")),
    # rayStartParams resources beside a group's resources, labels and redis-username in rayStartParams pass validation
    *(Case(f"start_params_the_operator_refuses[{p}]", "Warning event|must not get Pods",
           patch="raycluster-refused-start-params-unchecked")
      for p in ("worker-memory-beside-resources", "head-labels-in-start-params", "worker-labels-in-start-params",
                "head-redis-username")),
    # without the RayJobDeletionPolicy gate a suspended worker group is refused and keeps its Pods
    Case("suspended_worker_group_loses_only_its_pods", "worker group other of RayCluster .* to have no Pod",
         gates={"RayJobDeletionPolicy": False}),
    # status.desiredCPU/desiredMemory count the head's requests alone
    Case("worker_group_defaults_and_the_status_sums", "its requests .* added to the head's",
         patch="raycluster-desired-resources-head-only"),
    # the probes ignore rayVersion: a Ray 2.53+ cluster gets the older command probes
    Case("operator_completes_ray_pods_from_group_settings", "probe for rayVersion",
         patch="raycluster-probes-ignore-ray-version"),
    # gang scheduling (KubeRay v1.7.0 patched, profile kuberay-v1.7.0-was: its KubernetesWAS gate on, on the local-was
    # bed, which serves Kubernetes' Workload API): the Pods name no PodGroup (each is scheduled on its own)
    *(Case(test, "each naming PodGroup|to stay unscheduled", profile="kuberay-v1.7.0-was", local=True, bed="local-was",
           tree_patch="v1.7.0/raycluster-gang-pods-name-no-podgroup")
      for test in ("whole_cluster_is_one_gang", "gang_that_cannot_fit_starts_no_pod")),
    # the gang's minCount counts a multi-host group's replicas, not its Pods (replicas x numOfHosts)
    Case("whole_cluster_is_one_gang", "gang minCount: expected 4, observed 3", profile="kuberay-v1.7.0-was",
         local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-counts-replicas-not-hosts"),
    # the Workload and PodGroup carry no owner reference: nothing says they are the cluster's, nothing deletes them
    Case("whole_cluster_is_one_gang", "expected 1 Workload and 1 PodGroup owned by RayCluster .*, observed 0",
         profile="kuberay-v1.7.0-was", local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-not-owned"),
    # the head Pod names no PodGroup: it is scheduled alone while its workers wait for a gang that cannot form
    Case("gang_that_cannot_fit_starts_no_pod", "to stay unscheduled", profile="kuberay-v1.7.0-was", local=True,
         bed="local-was", tree_patch="v1.7.0/raycluster-gang-head-scheduled-alone"),
    # a changed size leaves the Workload and PodGroup as they were (their minCount stale)
    Case("gang_follows_suspend_and_scaling", "made anew owned by RayCluster .*, ganging 3 Pods",
         profile="kuberay-v1.7.0-was", local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-not-resized",
         timeout_scale=0.5),
    # suspending the cluster deletes its Workload and PodGroup (resuming makes new ones)
    Case("gang_follows_suspend_and_scaling", "to keep its Workload and PodGroup", profile="kuberay-v1.7.0-was",
         local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-dropped-on-suspend", timeout_scale=0.5),
    # a suspended worker group still counts in the gang's minCount (the gang waits for Pods that will never come)
    Case("gang_follows_suspend_and_scaling", "with its second group suspended: .*gang minCount: expected 2, observed 3",
         profile="kuberay-v1.7.0-was", local=True, bed="local-was",
         tree_patch="v1.7.0/raycluster-gang-counts-suspended-group", timeout_scale=0.5),
    # the gang counts at most 7 worker groups (the 8th group's worker is left out of minCount)
    Case("many_worker_groups_are_one_gang", "gang minCount: expected 9, observed 8", profile="kuberay-v1.7.0-was",
         local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-counts-seven-groups"),
    # the Workload is remade on every spec change (its generation in a label), a Recreate upgrade included
    Case("recreate_upgrade_keeps_the_gang", "after its Recreate upgrade: RayCluster .* to keep its Workload and PodGroup",
         profile="kuberay-v1.7.0-was", local=True, bed="local-was",
         tree_patch="v1.7.0/raycluster-gang-remade-on-every-change"),
    # an autoscaling cluster is gang scheduled too
    Case("autoscaling_cluster_is_not_gang_scheduled", "each naming no PodGroup", profile="kuberay-v1.7.0-was",
         local=True, bed="local-was", tree_patch="v1.7.0/raycluster-gang-for-autoscaling"),
    # samples helper
    # KubeRay's own samples under an operator that does not report a Pod creation refused by a quota as
    # ReplicaFailure: each fails at its last step
    *(Case(f"kuberay_raycluster_sample[{s}]", "ReplicaFailure=True/FailedCreateHeadPod",
           patch="raycluster-no-replica-failure", timeout_scale=0.6)
      for s in ("ray-cluster.autoscaler-v2.yaml", "ray-cluster.autoscaler.yaml", "ray-cluster.complete.yaml",
                "ray-cluster.custom-head-service.yaml", "ray-cluster.deprecate-gcs-ft.yaml",
                "ray-cluster.persistent-redis.yaml", "ray-cluster.embed-grafana.yaml",
                "ray-cluster.external-redis-uri.yaml", "ray-cluster.external-redis.yaml",
                "ray-cluster.head-command.yaml", "ray-cluster.overwrite-command.yaml", "ray-cluster.py-spy.yaml",
                "ray-cluster.sample.yaml", "ray-cluster.separate-ingress.yaml", "ray-cluster.tls.yaml")),
]
