// Package rollout is the rollout arithmetic of the Kubernetes Deployment
// controller (kube-controller-manager v1.37) and of the kubectl rollout
// verbs, as pure functions: objects and a now in, decisions out.
//
// Entry points, one per question:
//
//   - Is a Deployment's rollout done, stuck or going on? [Status]
//     (kubectl rollout status), from the status the controller wrote.
//   - What status will the controller write, conditions included, and
//     when will it look again? [SyncStatus], from the ReplicaSets.
//     ([CalculateStatus] is its first half, upstream's calculateStatus:
//     the counts and the Available condition only. A gate switched off:
//     the methods of the same names on [StatusOptions].)
//   - What are the pod-template hash and the ReplicaSet a template change
//     creates? [ComputeHash] and [NewReplicaSet].
//   - What does the next step of each strategy do, and how is a resize
//     shared out? [Rolling], [Recreate] and [Proportional].
//   - What do kubectl rollout history and undo say and send? [History]
//     and [RollbackPatch].
//
// It answers the questions the controller asks on every sync — how far may
// this rollout surge, how big should the new ReplicaSet be, which old
// ReplicaSets shrink and by how much, how is a resize shared out, what is
// the status and is the rollout stuck, which old ReplicaSets can go — and
// returns the answers as values ([Scale], [RollingStep], [StatusUpdate],
// [ProgressCheck]) for a caller to act on. The deployment package builds
// its Plan from them.
//
// # Guarantees
//
//   - Exact: every function gives the decision upstream gives, on every
//     input upstream accepts without panicking — same rounding (surge up,
//     unavailability down, shares half away from zero), same int32
//     wrap-around, same orderings and tie-breaks (ties and upstream's
//     non-transitive revision order are sorted with sort.Sort, as
//     upstream), same strings. Each doc comment names its upstream
//     counterpart.
//   - Pure: no client, no context, no goroutines, no clock (time is a now
//     parameter), no package state, no logging.
//   - Read-only inputs: arguments are never modified — slices are cloned
//     before sorting and never appended to, objects are deep-copied before
//     editing. Results may point at the caller's objects (a [Scale] holds
//     the ReplicaSet it resizes) but never share mutable memory with them
//     otherwise.
//   - No panics: nil objects, nil pointers, negative counts, values near
//     MaxInt32 and malformed annotations all give an answer. A nil
//     spec.replicas reads as [DefaultReplicas] (1, the API server's
//     default; upstream would panic), in every package of this library.
//   - Errors are returned, never swallowed. Where upstream logs or ignores
//     a problem and carries on, the function returns upstream's decision
//     together with an error wrapping [ErrIgnoredByUpstream]; a caller
//     after upstream-identical behaviour logs those and continues.
//
// # I/O boundary
//
// There is none. The package never reads or writes the API; the caller
// lists the ReplicaSets, applies [Scale.Scaled] objects, creates
// [NewReplicaSet], deletes what [Cleanup] returns, writes
// [StatusUpdate.Status] and requeues after [ProgressCheck.After]. Inputs
// are snapshots: like upstream, decisions are made from the objects as read
// at the start of a sync.
//
// # Usage
//
//	newRS := rollout.FindNewReplicaSet(d, rss)
//	_, olds := rollout.FindOldReplicaSets(d, rss)
//	if newRS == nil {
//		newRS, err = rollout.NewReplicaSet(d, olds) // create it
//	}
//	step, err := rollout.Rolling(d, newRS, olds)
//	for _, s := range step.Scales {
//		update(s.Scaled()) // then record s.Event()
//	}
//	if !step.Scaled() && rollout.DeploymentComplete(d, d.Status) {
//		deleteAll(rollout.Cleanup(d, olds))
//	}
//	st, err := rollout.SyncStatus(d, append(olds, newRS), newRS, now)
//
// # Upstream names
//
// deployment/util: ResolveFenceposts → [ResolveFenceposts]; MaxSurge →
// [MaxSurge]; MaxUnavailable → [MaxUnavailable]; MinAvailable →
// [MinAvailable]; NewRSNewReplicas → [NewRSNewReplicas]; IsSaturated →
// [IsSaturated]; GetReplicaSetProportion → [Proportion];
// getReplicaSetFraction → proportionOf; Revision, MaxRevision, LastRevision,
// SetDeploymentRevision → same names; SetNewReplicaSetAnnotations,
// SetReplicasAnnotations, ReplicasAnnotationsNeedUpdate,
// SetDeploymentAnnotationsTo, EqualIgnoreHash, FindNewReplicaSet,
// FindOldReplicaSets, FindActiveOrLatest, SetFromReplicaSetTemplate,
// DeploymentComplete, DeploymentProgressing, DeploymentTimedOut,
// HasProgressDeadline, HasRevisionHistoryLimit, IsRollingUpdate,
// ReplicaSetToDeploymentCondition → same names;
// copyDeploymentAnnotationsToReplicaSet → copyDeploymentAnnotations;
// GetDesiredReplicasAnnotation → [AnnotatedDesiredReplicas];
// getMaxReplicasAnnotation → annotatedMaxReplicas;
// Get{,Actual,Ready,Available,Terminating}ReplicaCountForReplicaSets →
// [TotalReplicas], [TotalActualReplicas], [TotalReadyReplicas],
// [TotalAvailableReplicas], [TotalTerminatingReplicas];
// NewDeploymentCondition, GetDeploymentCondition, SetDeploymentCondition,
// RemoveDeploymentCondition → [NewCondition], [GetCondition],
// [SetCondition], [RemoveCondition]; ReplicaSetsByRevision →
// [SortByRevision].
//
// controller: ComputeHash → [ComputeHash]; FilterActiveReplicaSets →
// [FilterActive]; ReplicaSetsByCreationTimestamp, ReplicaSetsBySizeOlder,
// ReplicaSetsBySizeNewer → [SortByCreationTimestamp], [SortBySizeOlder],
// [SortBySizeNewer].
//
// deployment: rolloutRolling, reconcileNewReplicaSet,
// reconcileOldReplicaSets, cleanupUnhealthyReplicas,
// scaleDownOldReplicaSetsForRollingUpdate → [Rolling]; rolloutRecreate,
// oldPodsRunning → [Recreate], [OldPodsRunning]; scale → [Proportional];
// isScalingEvent → [IsScalingEvent]; scaleReplicaSet → [Scale];
// cleanupDeployment → [Cleanup]; calculateStatus → [CalculateStatus]
// ([StatusOptions.CalculateStatus] for a
// DeploymentReplicaSetTerminatingReplicas gate switched off);
// getReplicaFailures → [ReplicaFailures]; syncRolloutStatus → [SyncStatus]
// ([StatusOptions.SyncStatus]);
// requeueStuckDeployment → nextProgressCheck; checkPausedConditions →
// [PauseCondition]; getNewReplicaSet → [NewReplicaSet],
// [SetNewReplicaSetAnnotations], [IsHashCollision], [BumpCollisionCount];
// generateReplicaSetName → [ReplicaSetName]; getRollbackTo → [RollbackTo].
//
// kubectl: DeploymentStatusViewer.Status → [Status];
// DeploymentHistoryViewer → [History]; deploymentRevision →
// [SelectRollbackTarget]; DeploymentRollbacker.Rollback → [Undo],
// [RollbackPatch]; the restart, pause and resume mutators → [RestartPatch],
// [PausePatch], [ResumePatch].
package rollout
