"""The RayService features: serving, upgrades, traffic, failure handling and options."""
from __future__ import annotations

from .model import Feature

FEATURES: tuple[Feature, ...] = (
    Feature("RayServiceReady", "RayService", "core", "a RayService becomes Ready and its serve endpoints answer"),
    Feature("RayServiceSuspend", "RayService", "extended",
            "spec.suspend deletes everything a RayService runs and resuming brings it back (KubeRay 1.7+)"),
    Feature("RayServiceClusterConfigCopied", "RayService", "extended", "its RayCluster has rayClusterConfig unchanged"),
    Feature("RayServiceManagedBy", "RayService", "extended",
            "a RayService managedBy another controller is left alone; managedBy is immutable and checked"),
    Feature("RayServiceInPlaceUpdate", "RayService", "extended",
            "a serve-config-only change is applied to the running cluster"),
    Feature("RayServiceZeroDowntimeUpgrade", "RayService", "extended",
            "a cluster-level change rolls to a new cluster (NewCluster) without failed requests"),
    Feature("RayServiceHeadFailureDuringUpgrade", "RayService", "extended",
            "losing the head Pod during an upgrade still ends in a Ready service"),
    Feature("RayServiceIncrementalUpgrade", "RayService", "extended",
            "traffic shifts gradually to the new cluster through Gateway API routes"),
    Feature("RayServiceUpgradeConditions", "RayService", "extended",
            "through a NewCluster upgrade UpgradeInProgress reports the pending cluster, Ready stays True, "
            "serviceStatus follows Ready"),
    Feature("RayServiceEvents", "RayService", "extended",
            "events about the RayService for creating clusters and Services, updating Serve apps, switching, deleting"),
    Feature("RayServiceInitializingTimeout", "RayService", "extended",
            "ray.io/initializing-timeout: a RayService that never gets ready fails (InitializingTimeout), clusters removed"),
    Feature("RayServiceValidation", "RayService", "extended",
            "an invalid RayService reports Ready=False/ValidationFailed and a Warning event, and creates nothing"),
    Feature("RayServiceAutoscaling", "RayService", "extended",
            "Serve autoscaling on Ray's in-tree autoscaler: load adds a replica and its worker, both go after it, "
            "no request fails, the RayService stays Ready on one RayCluster"),
    Feature("RayServiceAutoscalerFields", "RayService", "extended",
            "changing only autoscaler-owned worker-group fields starts no upgrade; an appended group updates in place"),
    Feature("RayServiceUnhealthyThresholdsIgnored", "RayService", "extended",
            "the deprecated serviceUnhealthySecondThreshold and deploymentUnhealthySecondThreshold are kept as given "
            "and change nothing: a 1 s threshold neither replaces a starting cluster nor does a change upgrade it"),
    Feature("RayServiceUpgradeStrategyNone", "RayService", "extended",
            "upgradeStrategy None: a cluster spec change creates no new RayCluster"),
    Feature("RayServiceClusterDeletionDelay", "RayService", "extended",
            "rayClusterDeletionDelaySeconds: the old RayCluster is kept that long after an upgrade's switch, then deleted"),
    Feature("RayServiceHeadLossWithGCSFT", "RayService", "extended",
            "with GCS fault tolerance, losing the active head Pod (no upgrade) keeps the RayService Ready on the "
            "same RayCluster and fails no request; a new head comes up and Serve reports RUNNING again"),
    Feature("RayServiceServeEndpoints", "RayService", "extended",
            "the serve Service routes only to Pods with a working Serve proxy: the head while the operator labels "
            "it ray.io/serve=true, a worker while its readiness probe (Serve proxy health) passes"),
    Feature("RayServiceHeadLossRedeploy", "RayService", "extended",
            "without GCS fault tolerance, losing the active head Pod (no upgrade) gets the Serve applications submitted "
            "again to the new head of the same RayCluster; the RayService is Ready and answers again"),
    Feature("RayServiceIncrementalRollback", "RayService", "extended",
            "reverting the cluster spec during an incremental upgrade reports RollbackInProgress, returns all traffic "
            "to the original RayCluster, deletes the new one, and fails no request"),
    Feature("RayServiceIncrementalUpgradeValidation", "RayService", "extended",
            "incremental-upgrade options that cannot work (surge above 100%, zero interval, no Gateway class) are "
            "refused: Ready=False/ValidationFailed naming the option (or the API server refuses), nothing created"),
    Feature("RayServiceIncrementalRollbackMatrix", "RayService", "extended",
            "changing course during an incremental upgrade at any stage (reverted before traffic moved, early, late, "
            "late with the new head lost; reverted then re-applied; reverted then a third spec) settles on one "
            "RayCluster running the last spec, with RollbackInProgress reported and no request failed"),
    Feature("RayServiceIncrementalUpgradeStepWithinSurge", "RayService", "extended",
            "an incremental upgrade whose stepSizePercent is above its maxSurgePercent (traffic moving faster than "
            "capacity) is refused like the other invalid options"),
    Feature("RayServiceServiceStatus", "RayService", "extended",
            "the deprecated status.serviceStatus is Running exactly when Ready=True, both ways: empty while "
            "initializing and when the serve endpoints drop to zero (Ready=False/ZeroServeEndpoints), Running again "
            "when they come back"),
    Feature("RayServiceHeadServiceSwitch", "RayService", "extended",
            "the RayService's head Service <name>-head-svc routes to exactly the active RayCluster's head Pod and "
            "moves to the new cluster's head with the serve Service in a NewCluster upgrade"),
    Feature("RayServiceServeConfigWithClusterChange", "RayService", "extended",
            "serveConfigV2 and the cluster spec changed in one update (upgradeStrategy NewCluster): the new Serve "
            "config goes to the new RayCluster only, the old one keeps the old config until the switch and after"),
    Feature("RayServiceOperatorUpgrade", "RayService", "extended",
            "upgrading the operator from an earlier release (profile operatorUpgradeFrom) keeps a RayService serving "
            "on the same RayCluster; a NewCluster upgrade works afterwards"),
    Feature("RayServiceCustomServeService", "RayService", "extended",
            "spec.serveService: the serve Service takes the user's name, type, labels and annotations, in the "
            "RayService's namespace, its selector replaced by the active RayCluster's serving Pods; it answers and "
            "counts the RayService's serve endpoints"),
    Feature("RayServiceCustomServePorts", "RayService", "extended",
            "a serve port given in spec.serveService (another port number to the container's serve port) is kept; "
            "with no type given, the serve Service and the RayService's head Service take rayClusterConfig's "
            "headGroupSpec.serviceType (KubeRay 1.6+)"),
    Feature("RayServiceClusterSuspendAtCreation", "RayService", "extended",
            "rayClusterConfig.suspend is put on the RayCluster at its creation only: the cluster waits suspended "
            "until whoever admits it resumes it, then serves; a later change on the RayService neither suspends "
            "it nor makes a new one (KubeRay 1.7+)"),
    Feature("RayServiceClusterUpgradeStrategyRefused", "RayService", "extended",
            "rayClusterConfig.upgradeStrategy is refused on a RayService's RayCluster (the RayService upgrades "
            "clusters itself): a Warning event InvalidRayClusterSpec, no Pod, the RayService not Ready (KubeRay 1.6+)"),
    Feature("RayServiceTokenAuthSecret", "RayService", "extended",
            "rayClusterConfig.authOptions.secretName: the RayService's cluster runs on the token of the user's Secret "
            "(the operator deploys Serve with it, Ray's dashboard takes it and no other) and no token Secret of the "
            "operator's is made (KubeRay 1.6+)", min_ray="2.52.0"),
)
