"""The RayJob features: submission modes, lifecycle, deletion, failure handling and options."""
from __future__ import annotations

from .model import Feature

FEATURES: tuple[Feature, ...] = (
    Feature("RayJobK8sJobMode", "RayJob", "core", "a RayJob submitted by a Kubernetes Job runs to completion"),
    Feature("RayJobStatusCheckTimeout", "RayJob", "extended",
            "a running RayJob whose status cannot be read for the operator's timeout ends Failed/"
            "JobStatusCheckTimeoutExceeded (KubeRay 1.7+)"),
    Feature("RayJobSuspend", "RayJob", "extended", "spec.suspend stops a RayJob and deletes its cluster"),
    Feature("RayJobSubmitterReconnection", "RayJob", "extended",
            "the RayJob survives its submitter losing and regaining the cluster"),
    Feature("RayJobDeadlines", "RayJob", "extended",
            "activeDeadlineSeconds ends a RayJob Failed/DeadlineExceeded, without retry"),
    Feature("RayJobRetries", "RayJob", "extended", "backoffLimit retries a failed RayJob, each attempt on a new cluster"),
    Feature("RayJobValidation", "RayJob", "extended",
            "an invalid RayJob reports ValidationFailed and creates nothing"),
    Feature("RayJobHTTPMode", "RayJob", "extended",
            "submissionMode HTTPMode: the operator submits through Ray's Jobs API, no submitter Job"),
    Feature("RayJobInteractiveMode", "RayJob", "extended",
            "submissionMode InteractiveMode: the RayJob waits for the user's job id and follows that job"),
    Feature("RayJobClusterSelector", "RayJob", "extended",
            "clusterSelector runs a RayJob on an existing RayCluster, which it keeps"),
    Feature("RayJobTTLAfterFinished", "RayJob", "extended",
            "shutdownAfterJobFinishes deletes the cluster only once ttlSecondsAfterFinished has passed"),
    Feature("RayJobSubmissionFailure", "RayJob", "extended",
            "a submitter Job that fails its backoffLimit ends the RayJob Failed/SubmissionFailed"),
    Feature("RayJobLightweightSubmitter", "RayJob", "extended",
            "KubeRay's light-weight submitter image (/submitter, KubeRay 1.5+) as a RayJob's submitterPodTemplate: "
            "it submits with its runtime env and tails the job's logs to the end, a failed submission counts "
            "against submitterConfig.backoffLimit, and a new submitter follows a job already submitted"),
    Feature("RayJobSidecarMode", "RayJob", "extended",
            "submissionMode SidecarMode: a submitter container beside the Ray head, no submitter Job"),
    Feature("RayJobSidecarSubmitterRestart", "RayJob", "extended",
            "SidecarMode with its submitter restarted (KubeRay 1.7+, alpha feature gate SidecarSubmitterRestart; "
            "Kubernetes 1.35+): a submitter container that dies while the job runs is restarted in the same head Pod "
            "and follows the running job again without submitting it twice, and the RayJob succeeds; a submitter "
            "that keeps dying is restarted a bounded number of times, then the RayJob ends Failed/SubmissionFailed"),
    Feature("RayJobHeadPodLoss", "RayJob", "extended",
            "a head Pod lost while the job runs: K8sJobMode gets a new head and the RayJob ends Failed; SidecarMode "
            "(its submitter inside the head) gets none and ends Failed/AppFailed"),
    Feature("RayJobPreRunningDeadline", "RayJob", "extended",
            "preRunningDeadlineSeconds ends a RayJob not yet running Failed/PreRunningDeadlineExceeded"),
    Feature("RayJobManagedBy", "RayJob", "extended",
            "a RayJob managedBy another controller is left alone; managedBy is immutable and checked"),
    Feature("RayJobDeletionRules", "RayJob", "extended",
            "deletionStrategy.deletionRules delete the workers, the cluster and the RayJob, each at its TTL"),
    Feature("RayJobSubmitterFinishedTimeout", "RayJob", "extended",
            "a Ray job still running 30 s after its submitter finished ends the RayJob Failed/"
            "JobDeploymentStatusTransitionGracePeriodExceeded (KubeRay 1.5+)"),
    Feature("RayJobClusterStatus", "RayJob", "extended",
            "a running RayJob shows its RayCluster's status in status.rayClusterStatus and follows its changes "
            "(KubeRay 1.5.1+)"),
    Feature("RayJobClusterSpecCopied", "RayJob", "extended", "its RayCluster has its rayClusterSpec unchanged"),
    Feature("RayJobKubeRaySamples", "RayJob", "extended",
            "KubeRay's own InteractiveMode RayJob sample of the release (as its sample test applies it), unchanged: a "
            "ready cluster with the Pods its replicas ask for (the batch samples need the internet: not run)"),
    Feature("RayJobMetadata", "RayJob", "extended",
            "spec.metadata is the metadata of the Ray job the RayJob submits (submitter Job or operator), as Ray's "
            "Jobs API reports it; the entrypoint runs with the head container's environment"),
    Feature("RayJobSubmitterPodTemplate", "RayJob", "extended",
            "the submitter Pod is the user's submitterPodTemplate (its env beside the operator's variables, "
            "resources, ports, probes, lifecycle hooks), the operator's submission command when it gives none"),
    Feature("RayJobHeadServices", "RayJob", "extended",
            "a RayJob's cluster spec shapes its head Services: the RayCluster's (headService name and annotations, "
            "headServiceAnnotations, serviceType) and the RayJob's own <name>-head-svc of the same type, on the head"),
    Feature("RayJobFaultToleranceAnnotations", "RayJob", "extended",
            "a RayJob's ray.io/ft-enabled and ray.io/external-storage-namespace annotations make its RayCluster fault "
            "tolerant in that storage namespace; beside gcsFaultToleranceOptions they are refused (ValidationFailed)"),
    Feature("RayJobClusterSpecKept", "RayJob", "extended",
            "a running RayJob's rayClusterSpec changed: its RayCluster keeps its spec and Pods, the job runs on"),
    Feature("RayJobClusterUpgradeStrategyRefused", "RayJob", "extended",
            "rayClusterSpec.upgradeStrategy is refused on a RayJob's RayCluster (a user's cluster's way of taking a "
            "new spec): a Warning event InvalidRayClusterSpec, no Pod, the job not started (KubeRay 1.6+)"),
)
