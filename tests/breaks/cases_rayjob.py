"""Break cases for the RayJob conformance tests, and the submitters and saboteurs they use."""
from __future__ import annotations

import threading

from kubernetes import client

from rayconformance.testing.expect import rayjob
from tests.breaks.harness import (Case, set_field, until, job_suspended, patch_rayjob_spec,
                                  stop_operator_when)

RESUBMITTING_SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{
    "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
    "command": ["bash", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --no-wait -- "
                "python -c \"import time; [print('tick', i, flush=True) or time.sleep(1) for i in range(45)]; "
                "print('entrypoint done')\" && sleep 40"],
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}}]}}

# A submitter that submits a 5-minute job and exits 0 at once: the RayJob ends Failed with jobStatus FAILED
# after the operator's submitter-finished grace period, with that reason instead of AppFailed.
EARLY_EXITING_SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{
    "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
    "command": ["bash", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id "
                "$RAY_JOB_SUBMISSION_ID --no-wait -- python -c 'import time; time.sleep(300)'"],
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}}]}}


def delete_selected_cluster_when_job_finished(api: client.ApiClient, stop: threading.Event) -> bool:
    """A saboteur acting as if the operator applied shutdownAfterJobFinishes to a RayCluster chosen by
    clusterSelector: once such a RayJob has finished, delete that RayCluster."""
    co = client.CustomObjectsApi(api)
    found: dict = {}

    def finished():
        for o in co.list_cluster_custom_object("ray.io", "v1", "rayjobs")["items"]:
            selected = (o["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
            if selected and rayjob.is_finished(o):
                found.update(ns=o["metadata"]["namespace"], cluster=selected)
                return True
        return False

    return until(stop, finished, 0.5) and until(stop, lambda: co.delete_namespaced_custom_object(
        "ray.io", "v1", found["ns"], "rayclusters", found["cluster"]) is not None, 1.0)



JOB_FIELDS_IGNORED = "v1.7.0/rayjob-job-fields-ignored"
ANNOTATIONS_NOT_VALIDATED = "v1.7.0/rayjob-annotations-not-validated"

CASES = [
    # lifecycle helper
    # a Ray job outliving its submitter's grace period reported as an application failure
    Case("job_outliving_its_submitter_ends_failed_after_grace", "JobDeploymentStatusTransitionGracePeriodExceeded",
         patch="rayjob-grace-period-reported-app-failed"),
    # the RayCluster's status never copied into the RayJob's
    Case("rayjob_shows_its_cluster_status", "status.rayClusterStatus", patch="rayjob-cluster-status-not-copied"),
    # preRunningDeadlineSeconds never checked: the RayJob waits for a job id for ever
    Case("pre_running_deadline_ends_job_waiting_for_job_id", "PreRunningDeadlineExceeded",
         patch="rayjob-ignores-pre-running-deadline"),
    # deletion rules' ttlSeconds ignored: the workers go as soon as the job ends
    Case("delete_workers_rule_waits_for_its_ttl", "to remain|worker Pods to keep",
         patch="rayjob-deletion-rules-ignore-ttl"),
    Case("each_deletion_policy_deletes_only_its_part[legacy-onSuccess-DeleteCluster]", "DeleteCluster",
         patch="rayjob-deletion-policies-mixed-up"),
    # an application failure on the selected RayCluster reported as SubmissionFailed
    Case("failing_job_on_selected_cluster_ends_failed", "reason=AppFailed", patch="rayjob-failure-reasons-swapped"),
    Case("selector_job_managed_elsewhere_is_left_alone", "left alone", patch="rayjob-ignores-managed-by"),
    # a Complete RayJob suspended (its submitter Job deleted with its cluster)
    Case("finished_job_ignores_suspend_and_keeps_its_submitter", "keep jobDeploymentStatus=Complete",
         patch="rayjob-finished-job-suspended"),
    # the RayJob's RayCluster created without its owner reference: deleting the RayJob leaves it
    *(Case(f"deleting_failed_job_deletes_its_cluster_and_submitter[{mode}]", "to be gone after its RayJob",
           patch="rayjob-cluster-not-owned") for mode in ("K8sJobMode", "HTTPMode")),
    # shutdownAfterJobFinishes deletes the submitter Job with the RayCluster
    Case("failed_submission_deletes_cluster_keeps_submitter", "keep its failed submitter Job",
         patch="rayjob-shutdown-deletes-submitter"),
    Case("finished_job_ignores_suspend_and_keeps_its_submitter", "outlive its RayCluster",
         patch="rayjob-shutdown-deletes-submitter"),
    # (no shutdownAfterJobFinishes: the RayCluster stays after the failed submission)
    Case("failed_submission_deletes_cluster_keeps_submitter", "to be gone after the submission failed",
         samples={"rayjob-submission-failure": set_field(["spec", "shutdownAfterJobFinishes"], False)}),
    Case("delete_workers_rule_waits_for_its_ttl", "RayCluster itself kept", patch="rayjob-delete-workers-deletes-cluster"),
    # (end of lifecycle helper's cases)
    Case("job_runs_to_completion_and_cluster_is_removed[K8sJobMode]", "shutdownAfterJobFinishes",
         samples={"rayjob-entrypoint-resources": set_field(["spec", "shutdownAfterJobFinishes"], False)}),
    Case("failing_entrypoint_ends_failed[K8sJobMode]", "reason=AppFailed",
         samples={"rayjob-basic": set_field(["spec", "submitterPodTemplate"], EARLY_EXITING_SUBMITTER)}),
    Case("created_suspended_then_resumed", r"RayJob \S+ to finish", saboteur=stop_operator_when(job_suspended)),
    # a Running RayJob's suspend flag ignored: only an Initializing RayJob may go to Suspending (an operator stopped
    # once the job runs loses the race: the test suspends it the moment it sees Running)
    Case("suspending_running_job_tears_down_cluster", "Suspended", patch="rayjob-running-job-ignores-suspend"),
    # a RayJob created suspended creates its RayCluster first and deletes it again on the way to Suspended (the end
    # state is right: only a watch from before the creation sees it)
    Case("created_suspended_then_resumed", "no RayCluster may be created",
         patch="rayjob-suspended-job-creates-its-cluster-first"),
    Case("new_submitter_attaches_to_running_job[pod-deletion]", "submitter",
         samples={"rayjob-basic": set_field(["spec", "submitterPodTemplate"], RESUBMITTING_SUBMITTER)}),
    Case("new_submitter_attaches_to_running_job[network-cut]", "submitter",
         samples={"rayjob-basic": set_field(["spec", "submitterPodTemplate"], RESUBMITTING_SUBMITTER)}, local=True),
    Case("active_deadline_ends_job_without_retry", "reason=DeadlineExceeded",
         saboteur=patch_rayjob_spec("activeDeadlineSeconds", None), timeout_scale=0.2),
    Case("invalid_rayjob_fails_validation_and_creates_nothing[ttl-without-shutdown]", "ValidationFailed",
         samples={"rayjob-invalid": set_field(["spec", "shutdownAfterJobFinishes"], True)}),
    Case("http_mode_runs_without_submitter_job", "no Kubernetes Job in HTTPMode",
         samples={"rayjob-http-mode": set_field(["spec", "submissionMode"], "K8sJobMode")}),
    Case("interactive_mode_waits_for_job_id", "Waiting",
         samples={"rayjob-interactive": set_field(["spec", "submissionMode"], "K8sJobMode")}, timeout_scale=0.2),
    Case("cluster_selector_runs_on_existing_cluster", "RayCluster basic to remain after a RayJob",
         saboteur=delete_selected_cluster_when_job_finished),
    Case("cluster_deleted_only_after_ttl", "ttlSecondsAfterFinished=30",
         saboteur=patch_rayjob_spec("ttlSecondsAfterFinished", 0)),
    # the submitter reaches the cluster: the job succeeds instead of failing its submission
    Case("unreachable_submission_ends_submission_failed", "reason=SubmissionFailed",
         samples={"rayjob-submission-failure": set_field(["spec", "submitterPodTemplate"], None)}),
    Case("pre_running_deadline_ends_job_that_cannot_start", "PreRunningDeadlineExceeded",
         samples={"rayjob-pre-running-deadline": set_field(["spec", "preRunningDeadlineSeconds"], None)}),
    Case("sidecar_mode_submits_beside_the_head", "no Kubernetes Job in SidecarMode",
         samples={"rayjob-sidecar": set_field(["spec", "submissionMode"], "K8sJobMode")}),
    Case("rayjob_managed_elsewhere_is_left_alone", "left alone",
         samples={"rayjob-managed-by": set_field(["spec", "managedBy"], "ray.io/kuberay-operator")}),
    # the RayCluster's rule is due at once, with the workers' rule: the most impactful (DeleteCluster) runs
    Case("deletion_rules_clean_up_in_stages", "RayCluster itself kept",
         samples={"rayjob-deletion-rules": set_field(
             ["spec", "deletionStrategy", "deletionRules", 1, "condition", "ttlSeconds"], 0)}),

    # Patched operator builds (tests/breaks/patches/<patch>.patch against KubeRay v1.6.1): the operator itself
    # does the wrong thing.
    # activeDeadlineSeconds never checked: the 10-minute job runs on
    Case("active_deadline_ends_job_without_retry", "reason=DeadlineExceeded", patch="rayjob-ignores-active-deadline",
         timeout_scale=0.2),
    # a failed job retried while status.failed < backoffLimit (not backoffLimit + 1): two attempts, not three
    Case("backoff_limit_retries_on_new_clusters[K8sJobMode]", "3 failed attempts", patch="rayjob-retries-one-too-few",
         timeout_scale=0.5),
    # validation skipped: the invalid RayJob is run
    *(Case(f"invalid_rayjob_fails_validation_and_creates_nothing[{invalid}]", "ValidationFailed",
           patch="rayjob-skips-validation") for invalid in ("ttl-without-shutdown", "runtime-env-not-yaml",
                                                              "name-too-long", "k8s-token-auth",
                                                              "head-labels-in-start-params",
                                                              "worker-labels-in-start-params", "head-redis-username")),
    # The RayCluster controller lets a RayJob's cluster take an upgradeStrategy (only a RayService's is refused).
    Case("cluster_upgrade_strategy_is_refused_for_a_rayjob", "a Warning event about upgradeStrategy",
         patch="rayjob-cluster-upgrade-strategy-accepted"),
    # validation fails the RayJob without a word: no Warning event says why
    Case("invalid_rayjob_fails_validation_and_creates_nothing[runtime-env-not-yaml]", "Warning event",
         patch="rayjob-validation-records-no-event"),
    # a submitter Job created in HTTPMode (and SidecarMode) too
    Case("http_mode_runs_without_submitter_job", "no Kubernetes Job in HTTPMode",
         patch="rayjob-submitter-job-in-every-mode"),
    Case("sidecar_mode_submits_beside_the_head", "in SidecarMode", patch="rayjob-submitter-job-in-every-mode"),
    # InteractiveMode given a job id of the operator's own
    Case("interactive_mode_waits_for_job_id", "must not have one of its own",
         patch="rayjob-interactive-generates-job-id"),
    # shutdownAfterJobFinishes applied to the RayCluster chosen by clusterSelector (both of v1.6.1's guards removed)
    Case("cluster_selector_runs_on_existing_cluster", "RayCluster basic to remain after a RayJob",
         patch="rayjob-deletes-selected-cluster"),
    # ttlSecondsAfterFinished read as 0: the RayCluster goes as soon as the job ends
    Case("cluster_deleted_only_after_ttl", "ttlSecondsAfterFinished=30", patch="rayjob-ignores-ttl-after-finished"),
    # an application failure reported as SubmissionFailed, a submission failure as AppFailed
    Case("failing_entrypoint_ends_failed[K8sJobMode]", "reason=AppFailed", patch="rayjob-failure-reasons-swapped"),
    Case("unreachable_submission_ends_submission_failed", "reason=SubmissionFailed",
         patch="rayjob-failure-reasons-swapped"),
    # a Ray job stopped by its user (STOPPED) taken for a failed one: Failed/AppFailed instead of Complete
    Case("stopped_job_ends_complete_not_failed[K8sJobMode]", "jobStatus=STOPPED, jobDeploymentStatus=Complete",
         patch="rayjob-stopped-job-counted-failed"),
    # each deletion policy (a rule's, or the legacy onSuccess one) carried out as another one
    *(Case(f"each_deletion_policy_deletes_only_its_part[{when}-{policy}]", "Delete(Workers|Cluster|Self|None)",
           patch="rayjob-deletion-policies-mixed-up")
      for when in ("succeeded", "failed") for policy in ("DeleteWorkers", "DeleteCluster", "DeleteSelf", "DeleteNone")),
    Case("each_deletion_policy_deletes_only_its_part[legacy-onSuccess-DeleteWorkers]", "DeleteWorkers",
         patch="rayjob-deletion-policies-mixed-up"),
    # the head of a SidecarMode RayJob's cluster recreated, a K8sJobMode one's not
    Case("k8sjob_mode_head_loss_gets_a_new_head_and_ends_failed", "must get a new head Pod",
         patch="rayjob-head-restart-modes-swapped"),
    # (with its head back, the SidecarMode RayJob does not end Failed either: the test fails waiting for that first)
    Case("sidecar_mode_head_loss_ends_failed_without_a_new_head", r"must not be replaced|RayJob \S+ to finish",
         patch="rayjob-head-restart-modes-swapped"),
    # a Suspended RayJob whose suspend is cleared stays Suspended (the cluster name it no longer has is required)
    Case("suspending_running_job_tears_down_cluster", "jobStatus=RUNNING",
         patch="rayjob-suspended-stays-suspended"),
    # preRunningDeadlineSeconds never checked: the RayJob waits for its cluster for ever
    Case("pre_running_deadline_ends_job_that_cannot_start", "PreRunningDeadlineExceeded",
         patch="rayjob-ignores-pre-running-deadline"),
    # spec.managedBy not looked at: the operator runs a RayJob another controller manages
    Case("rayjob_managed_elsewhere_is_left_alone", "left alone", patch="rayjob-ignores-managed-by"),
    # DeleteWorkers deletes the whole RayCluster
    Case("deletion_rules_clean_up_in_stages", "RayCluster itself kept", patch="rayjob-delete-workers-deletes-cluster"),
    # KubeRay v1.7.0 patched: the status-check failures are never timed (the job stays Running)
    Case("unreachable_job_ends_with_status_check_timeout", "JobStatusCheckTimeoutExceeded", profile="kuberay-v1.7.0",
         local=True, tree_patch="v1.7.0/rayjob-no-status-check-timeout", timeout_scale=0.5),
    # KubeRay v1.7.0 with SidecarSubmitterRestart (profile kuberay-v1.7.0-sidecar-restart; the local provider kills
    # the container): the gate switched off, a killed submitter container is not restarted and the RayJob fails
    *(Case(test, "to run again in the same head Pod", profile="kuberay-v1.7.0-sidecar-restart", local=True,
           gates={"SidecarSubmitterRestart": False})
      for test in ("killed_submitter_container_restarts_and_follows_the_same_job",
                   "submitter_that_keeps_dying_fails_the_job")),
    # the submitter's restarts never counted against its limit: killed 4 times, the RayJob stays Running
    Case("submitter_that_keeps_dying_fails_the_job", "reason=SubmissionFailed once its submitter container",
         profile="kuberay-v1.7.0-sidecar-restart", local=True,
         tree_patch="v1.7.0/rayjob-sidecar-restarts-unbounded"),
    # the submission-mode axis (testing/axes.py)
    # (the HTTPMode and SidecarMode runs of the behaviors parametrized over submission modes)
    # entrypointResources dropped from the submission (the Jobs API request, the submitter's command): the
    # entrypoint finds no R1 held for it and exits 1
    *(Case(f"job_runs_to_completion_and_cluster_is_removed[{mode}]",
           r"jobStatus=SUCCEEDED.*observed jobStatus='FAILED'", patch="rayjob-entrypoint-resources-dropped")
      for mode in ("HTTPMode", "SidecarMode")),
    Case("failing_entrypoint_ends_failed[HTTPMode]", "reason=AppFailed", patch="rayjob-failure-reasons-swapped"),
    # SidecarMode decides the reason where it sees the head's submitter container fail: swapped there too
    Case("failing_entrypoint_ends_failed[SidecarMode]", "reason=AppFailed",
         patch="rayjob-sidecar-failure-reasons-swapped"),
    *(Case(f"stopped_job_ends_complete_not_failed[{mode}]", "jobStatus=STOPPED, jobDeploymentStatus=Complete",
           patch="rayjob-stopped-job-counted-failed") for mode in ("HTTPMode", "SidecarMode")),
    *(Case(f"backoff_limit_retries_on_new_clusters[{mode}]", "3 failed attempts", patch="rayjob-retries-one-too-few",
           timeout_scale=0.5) for mode in ("HTTPMode", "SidecarMode")),
    Case("backoff_limit_retries_failed_submissions", "3 failed attempts", patch="rayjob-retries-one-too-few",
         timeout_scale=0.5),
    # K8sJobMode: a submitter that fails whenever the application fails (it exits 1 after following the job's log),
    # as if the application's failure were the submitter's: the last attempt's submitter Job failed, not succeeded
    # (this replaces the saboteur clearing backoffLimit mid-run: rayjob-retries-one-too-few breaks the retries)
    Case("backoff_limit_retries_on_new_clusters[K8sJobMode]", "succeeded 1 and failed 0", timeout_scale=0.5,
         samples={"rayjob-retries": lambda docs: [set_field(path, value)(docs) for path, value in (
             (["spec", "submitterConfig"], {"backoffLimit": 0}),
             (["spec", "submitterPodTemplate"], {"spec": {"restartPolicy": "Never", "containers": [{
                 "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
                 "command": ["bash", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id "
                             "$RAY_JOB_SUBMISSION_ID --no-wait -- python -c 'import sys; sys.exit(3)'; ray job logs "
                             "--address http://$RAY_DASHBOARD_ADDRESS --follow $RAY_JOB_SUBMISSION_ID; exit 1"],
                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                               "requests": {"cpu": "100m", "memory": "200Mi"}}}]}}))]}),
    # submitter helper
    # KubeRay's light-weight submitter exits 0 at once: after submitting (not following the job's log) and on any
    # error (a failed submission counted a success)
    Case("lightweight_submitter_runs_job_and_logs_its_output", r"lacks \['test_counter got 1'",
         patch="rayjob-lightweight-submitter-exits-at-once"),
    Case("lightweight_submitter_failure_ends_submission_failed", "reason=SubmissionFailed",
         patch="rayjob-lightweight-submitter-exits-at-once"),
    Case("new_lightweight_submitter_follows_submitted_job", "stream the running job's output",
         patch="rayjob-lightweight-submitter-exits-at-once"),
    # samples helper
    # KubeRay's own InteractiveMode sample under an operator creating one worker Pod more than a group's replicas:
    # the RayJob's cluster never reaches status.state ready
    Case("kuberay_interactive_rayjob_sample[ray-job.interactive-mode.yaml]", "status.state=ready",
         patch="raycluster-one-worker-too-many", timeout_scale=0.5),
    # fields helper (conformance/rayjob/test_job_fields.py, test_cluster_spec_through_rayjob.py)
    # KubeRay v1.7.0 patched to ignore the RayJob fields these tests assert: spec.metadata dropped from the
    # submission (submitter and Jobs API client), the submitterPodTemplate's env dropped, onFailure read as
    # onSuccess, the RayJob's own head Service always ClusterIP, the storage-namespace annotation not passed to the
    # RayCluster, the RayJob's annotations not validated with its cluster spec, a changed rayClusterSpec applied
    *(Case(f"job_metadata_and_head_env_reach_ray[{mode}]", "with the RayJob's spec.metadata",
           profile="kuberay-v1.7.0", local=True, tree_patch=JOB_FIELDS_IGNORED) for mode in ("K8sJobMode", "HTTPMode")),
    Case("submitter_runs_as_the_template_gives_it", "carry the env of the RayJob's submitterPodTemplate",
         profile="kuberay-v1.7.0", local=True, tree_patch=JOB_FIELDS_IGNORED),
    Case("legacy_on_failure_policy_applies_to_a_failed_job", "RayCluster itself kept|to remain",
         profile="kuberay-v1.7.0", local=True, tree_patch=JOB_FIELDS_IGNORED),
    Case("cluster_spec_shapes_both_head_services", "to be NodePort Services", profile="kuberay-v1.7.0", local=True,
         tree_patch=JOB_FIELDS_IGNORED),
    Case("annotation_beside_fault_tolerance_options_is_refused[ft-enabled]", "jobDeploymentStatus=ValidationFailed",
         profile="kuberay-v1.7.0", local=True, tree_patch=JOB_FIELDS_IGNORED),
    # KubeRay v1.7.0 patched: the RayJob's annotations not read when its cluster spec is validated. ray.io/ft-enabled
    # no longer allows the head's RAY_REDIS_ADDRESS (the RayJob refused), and the storage-namespace annotation beside
    # gcsFaultToleranceOptions passes (its RayCluster, refused by the RayCluster's own validation, creates nothing
    # whose Redis cleanup could hold the namespace; under JOB_FIELDS_IGNORED it did, the test erring in teardown)
    Case("annotations_make_the_jobs_cluster_fault_tolerant", "RAY_REDIS_ADDRESS is set which implicitly enables",
         profile="kuberay-v1.7.0", local=True, tree_patch=ANNOTATIONS_NOT_VALIDATED),
    Case("annotation_beside_fault_tolerance_options_is_refused[external-storage-namespace]",
         "jobDeploymentStatus=ValidationFailed", profile="kuberay-v1.7.0", local=True,
         tree_patch=ANNOTATIONS_NOT_VALIDATED),
    Case("running_job_keeps_its_cluster_when_cluster_spec_changes", "to keep generation", profile="kuberay-v1.7.0",
         local=True, tree_patch=JOB_FIELDS_IGNORED),
    # copies helper (conformance/rayjob/test_cluster_spec_copy.py): KubeRay v1.7.0 patched to make the RayJob's
    # RayCluster from its rayClusterSpec without the rayVersion, which every case sets
    *(Case(f"cluster_spec_reaches_its_raycluster_unchanged[{case}]", r"spec\.rayVersion: expected '[0-9.]+', observed",
           profile="kuberay-v1.7.0", local=True, tree_patch="v1.7.0/rayjob-cluster-spec-loses-ray-version")
      for case in ("every-release", "credentials-from-secret", "groups-auth-suspend", "v1.7-options",
                   "v1.7-store-claim")),
]
