"""The RayCluster features: a cluster's Pods, Services, scaling, autoscaling, fault tolerance and options."""
from __future__ import annotations

from .model import Feature

FEATURES: tuple[Feature, ...] = (
    Feature("RayClusterProvisioning", "RayCluster", "core",
            "head and workers come up; HeadPodReady and RayClusterProvisioned; head Service"),
    Feature("RayClusterManualScaling", "RayCluster", "core", "changing a worker group's replicas scales its Pods"),
    Feature("RayClusterSuspend", "RayCluster", "extended", "spec.suspend deletes the Pods and resuming recreates them"),
    Feature("RayClusterGCSFaultTolerance", "RayCluster", "extended",
            "with external Redis, detached actors survive the loss of the head Pod"),
    Feature("RayClusterGCSFaultToleranceOptions", "RayCluster", "extended",
            "gcsFaultToleranceOptions as KubeRay's e2e configures them (redisUsername of an ACL user, "
            "externalStorageNamespace, a redis:// address): state kept in that Redis namespace through the loss of "
            "the head Pod, and cleaned out of it on deletion"),
    Feature("RayClusterGCSStorageIsolation", "RayCluster", "extended",
            "RayClusters with GCS fault tolerance on one Redis each keep their state under their own storage "
            "namespace (their UID); deleting one cleans only its own"),
    Feature("RayClusterAutoscalerV1", "RayCluster", "extended",
            "autoscalerOptions.version v1 runs the in-tree autoscaler v1 (whatever Ray's default), which scales workers "
            "up and down; every autoscaler test's v1 case checks which autoscaler runs"),
    Feature("RayClusterAutoscalerV2", "RayCluster", "extended",
            "autoscalerOptions.version v2 runs the in-tree autoscaler v2, which scales workers up and down; every "
            "autoscaler test's v2 case checks which autoscaler runs"),
    Feature("RayClusterAutoscalerGroupIdleTimeout", "RayCluster", "extended",
            "autoscaler v2: a worker group's idleTimeoutSeconds replaces autoscalerOptions.idleTimeoutSeconds for "
            "that group's idle workers"),
    Feature("RayClusterAutoscalerUpscalingMode", "RayCluster", "extended",
            "autoscaler v2: autoscalerOptions.upscalingMode Conservative's first batch for a burst of demand is at "
            "most 5 workers, Aggressive adds all the burst needs at once (Ray's autoscaler v2 before 2.49 launches "
            "one worker first whatever the mode, so the modes cannot be told apart there)", min_ray="2.49.0"),
    Feature("RayClusterWorkerGroupPriority", "RayCluster", "extended",
            "autoscaler v2: of worker groups that fit a demand equally well, the one with the higher priority gets "
            "the new worker (KubeRay 1.7+)", min_ray="2.56.0"),
    Feature("RayClusterGCSEmbeddedStorage", "RayCluster", "extended",
            "GCS fault tolerance without Redis (gcsFaultToleranceOptions.backend rocksdb, alpha): the store's claim is "
            "provisioned and mounted, detached actors survive the loss of the head Pod, the claim goes with the "
            "cluster (KubeRay 1.7+)", min_ray="2.60.0"),
    Feature("RayClusterAutoscalerSidecarOptions", "RayCluster", "extended",
            "autoscalerOptions env, envFrom, volumeMounts, securityContext, resources, image and imagePullPolicy on "
            "the autoscaler sidecar alone (the Ray container's image when none is given); its env reaches Ray's "
            "autoscaler"),
    Feature("RayClusterAutoscalerCommandArgs", "RayCluster", "extended",
            "autoscalerOptions command and args replace the autoscaler sidecar's, and args can run KubeRay's generated "
            "command ($KUBERAY_GEN_AUTOSCALER_START_CMD); left out, its resources and pull policy are KubeRay's "
            "defaults (KubeRay 1.7+)"),
    Feature("RayClusterNetworkPolicy", "RayCluster", "extended",
            "spec.networkPolicy (alpha): a NetworkPolicy per node group, owned by the cluster, allowing its own Pods "
            "and carrying the head's, the workers' or a group's own rules, following mode changes, gone with the "
            "block; not whether a network plugin enforces them (KubeRay 1.7+)"),
    Feature("RayClusterHistoryCollector", "RayCluster", "extended",
            "spec.historyServerOptions (alpha): a collector container with collectorOptions' image, pull policy, "
            "resources and env beside every Ray container; not what it ships (KubeRay 1.7+)"),
    Feature("RayClusterGangScheduling", "RayCluster", "extended",
            "gang scheduling on Kubernetes' own scheduler (KubeRay 1.7+, alpha feature gate KubernetesWAS; Kubernetes "
            "1.36 serving scheduling.k8s.io/v1alpha2 with GenericWorkload and GangScheduling, as cluster local-was): a "
            "RayCluster labelled ray.io/gang-scheduling-enabled gets one Workload and one PodGroup it controls, "
            "ganging the head and every worker (a multi-host replica counting its hosts); its Pods name the PodGroup "
            "and start all together or not at all; the gang survives a suspend and a Recreate upgrade, is made anew "
            "at the new size when the cluster is scaled or a worker group suspended, stays one gang past 8 worker "
            "groups, and goes with the cluster; an autoscaling cluster gets none"),
    Feature("RayClusterMTLS", "RayCluster", "extended",
            "spec.tlsOptions.enabled (alpha, with cert-manager in the cluster): the operator has cert-manager issue a "
            "CA and head and worker certificates into Secrets, mounts them into the Ray Pods (every worker group, the "
            "autoscaler sidecar and the GCS wait included) with Ray's TLS settings, Ray runs jobs across head and "
            "worker over TLS, and the certificates go with the cluster; without it no TLS parts (KubeRay 1.7+)"),
    Feature("RayClusterOwnContainerCommand", "RayCluster", "extended",
            "annotation ray.io/overwrite-container-cmd: the Ray container runs its own command and args, unchanged"),
    Feature("RayClusterServeService", "RayCluster", "extended",
            "annotation ray.io/enable-serve-service: a serve Service for the RayCluster, answering through Ray Serve"),
    Feature("RayClusterNoHeadRestartAfterProvisioning", "RayCluster", "extended",
            "annotation ray.io/disable-provisioned-head-restart: a provisioned cluster's lost head is not recreated "
            "(KubeRay 1.6+)"),
    Feature("RayClusterGCSStoreOptions", "RayCluster", "extended",
            "gcsFaultToleranceOptions.storage (alpha): the embedded store's claim takes size, storageClassName, "
            "accessModes and subPath; deletionPolicy Retain keeps it after its cluster, and another cluster given it "
            "by claimName reads what the first one's GCS stored (KubeRay 1.7+)", min_ray="2.60.0"),
    Feature("RayClusterGCSFTDeletionTimeout", "RayCluster", "extended",
            "annotation ray.io/gcs-ft-deletion-timeout: a deleted fault-tolerant cluster whose Redis cleanup cannot "
            "run is let go after that many seconds (KubeRay 1.7+)"),
    Feature("RayClusterTokenAuthSecretName", "RayCluster", "extended",
            "authOptions.secretName: Ray's token comes from the user's Secret, the operator makes none (KubeRay "
            "1.6+)", min_ray="2.52.0"),
    Feature("RayClusterK8sTokenAuth", "RayCluster", "extended",
            "authOptions.enableK8sTokenAuth: Ray lets in the Kubernetes identities RBAC allows ray:write on the "
            "RayCluster, its own nodes included, and the operator makes no token Secret (KubeRay 1.6+)",
            min_ray="2.55.0"),
    Feature("RayClusterAutoscalerPlacementGroups", "RayCluster", "extended",
            "the autoscaler (v1 with RayClusterAutoscalerV1, v2 with RayClusterAutoscalerV2): a placement group's "
            "bundles bring up the workers its strategy needs, and replacements for deleted ones; workers holding a "
            "placement group stay however long they idle, and go once it is removed; an idle worker a pending "
            "placement group needs is kept"),
    Feature("RayClusterAutoscalerSpecChanges", "RayCluster", "extended",
            "the autoscaler (v1 with RayClusterAutoscalerV1, v2 with RayClusterAutoscalerV2) follows worker groups "
            "changed while it runs: a raised maxReplicas lets capped demand in, a lowered one scales the group down "
            "to it, a worker group added later is scaled for its own demand and the others still for theirs"),
    Feature("RayClusterGPUWorkerGroups", "RayCluster", "extended",
            "worker groups requesting nvidia.com/gpu get GPUs (needs a cluster with GPU nodes)"),
    Feature("RayClusterGPUAutoscaling", "RayCluster", "extended",
            "a GPU worker group at zero is scaled up by GPU demand onto a GPU node and back to zero, and not by CPU "
            "demand a CPU group can serve; a CPU Pod on a GPU node gets no GPU (autoscaler v2; needs GPU nodes)"),
    Feature("RayClusterOwnedByRayJob", "RayCluster", "extended",
            "the RayCluster behaviors parametrized over owners hold for a cluster a RayJob made (HTTPMode): a lost "
            "worker Pod replaced in its group, a lost head Pod reported through HeadPodReady; the RayJob keeps it"),
    Feature("RayClusterOwnedByRayService", "RayCluster", "extended",
            "the RayCluster behaviors parametrized over owners hold for a cluster a RayService made: a lost worker "
            "Pod replaced in its group, a lost head Pod reported through HeadPodReady; the RayService keeps it"),
    Feature("RayClusterFailureConditions", "RayCluster", "extended",
            "ReplicaFailure when Pods cannot be created; HeadPodReady follows a lost head, Provisioned stays True"),
    Feature("RayClusterHeadStartFailure", "RayCluster", "extended",
            "a head whose container cannot start (its image not on the node, imagePullPolicy Never) reports "
            "HeadPodReady=False with the container's waiting reason and names it"),
    Feature("RayClusterWorkersToDelete", "RayCluster", "extended",
            "scaleStrategy.workersToDelete deletes exactly the named worker Pods"),
    Feature("RayClusterManagedBy", "RayCluster", "extended",
            "spec.managedBy naming another controller: the operator leaves the cluster alone; the field is immutable"),
    Feature("RayClusterNoRedundantPods", "RayCluster", "extended",
            "scaling never runs more worker Pods than desired nor creates more than needed"),
    Feature("RayClusterMultiHostAutoscaling", "RayCluster", "extended",
            "Ray's autoscaler scales a multi-host group of fake TPU hosts (TPU as a Ray resource, no GKE node selectors) "
            "by whole slices: one replica of demand brings one slice, idle or capped slices go whole (Ray's "
            "autoscaler before 2.48 requires GKE TPU node selectors on such a group and stops)", min_ray="2.48.0"),
    Feature("RayClusterMultiHost", "RayCluster", "extended",
            "worker groups as slices (feature gate RayMultiHostIndexing, beta and on from KubeRay 1.6): each worker "
            "Pod carries its replica's index, kept by a replacement, the lowest free one for a new replica; with "
            "numOfHosts > 1 a replica is a whole slice of numOfHosts Pods sharing a replica name and index, one per "
            "host index, scaled, removed and recreated whole"),
    Feature("RayClusterUpgradeStrategyRecreate", "RayCluster", "extended",
            "upgradeStrategy Recreate: a changed Pod template replaces all of the cluster's Pods (KubeRay 1.6+)"),
    Feature("RayClusterStartParams", "RayCluster", "extended",
            "every rayStartParams key reaches `ray start` with its value, Ray's boolean options set to false too: "
            "include-log-monitor \"false\" reaches it, so no log monitor starts (KubeRay 1.7+; earlier releases drop it)"),
    Feature("RayClusterHeadService", "RayCluster", "extended",
            "the head Service follows serviceType, headServiceAnnotations, a headService of the user's and the head "
            "container's named ports; left unset, it is headless with Ray's default ports; status.head and "
            "status.endpoints are read from it, and Ray answers through it"),
    Feature("RayClusterHeadIngress", "RayCluster", "extended",
            "headGroupSpec.enableIngress: an Ingress owned by the RayCluster routes to the head Service's dashboard "
            "port, with the cluster's annotations and its kubernetes.io/ingress.class as ingress class"),
    Feature("RayClusterIngressOptions", "RayCluster", "extended",
            "headGroupSpec.ingressOptions set the Ingress rule's host, path, pathType and TLS, and changed on a "
            "running cluster update the same Ingress; removed, any host, / and Prefix (KubeRay 1.7+)"),
    Feature("RayClusterGroupLabelsAndResources", "RayCluster", "extended",
            "a group's resources and labels fields are its Ray node's resources and labels (its Pods get the labels, "
            "its container keeps its limits); Ray resources also in rayStartParams, or labels there, are refused "
            "(KubeRay 1.5+)"),
    Feature("RayClusterWorkerGroupSuspend", "RayCluster", "extended",
            "workerGroupSpecs[].suspend deletes that group's Pods only and takes it out of the status counts; "
            "resuming brings them back (feature gate RayJobDeletionPolicy, beta and on from KubeRay 1.6)"),
    Feature("RayClusterStatusCounts", "RayCluster", "extended",
            "a worker group's unset replicas, minReplicas, maxReplicas and numOfHosts default to 0, 0, unbounded and "
            "1; status counts desired, min, max, available and ready workers and sums the desired CPU, memory and "
            "GPU from the groups' container requests"),
    Feature("RayClusterPodDefaults", "RayCluster", "extended",
            "the operator completes Ray Pods: `ray start` ports, worker address and sizes given or defaulted, "
            "health probes in the form of the cluster's rayVersion (a user's probe kept), env vars for Ray and the "
            "user's code, a metrics port, /dev/shm unless plasma-directory (KubeRay 1.6+)"),
    Feature("RayClusterTokenAuth", "RayCluster", "extended",
            "authOptions mode token: the operator creates the token Secret and wires it into Ray; the dashboard "
            "refuses requests without the token; RayJobs and RayServices still work", min_ray="2.52.0"),
    Feature("RayClusterKubeRaySamples", "RayCluster", "extended",
            "KubeRay's own RayCluster samples of the release (those its sample tests apply), unchanged: provisioned "
            "with the Pods their replicas ask for, a Ray driver in every Pod; all Pods lost under a quota of 0 Pods "
            "turn HeadPodReady False/HeadPodNotFound and ReplicaFailure True/FailedCreateHeadPod"),
)
