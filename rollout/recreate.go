package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/testhooks"
)

// RecreateStep is what one pass of a Recreate rollout does (upstream
// rolloutRecreate, minus the I/O).
type RecreateStep struct {
	// Scales are the ReplicaSet updates, in order: either every active old
	// ReplicaSet to 0, or the new ReplicaSet to D.
	Scales []Scale
	// ScaledOld is true when old ReplicaSets are scaled down; upstream then
	// syncs the status and ends the pass.
	ScaledOld bool
	// OldPodsRunning is true when the pass waits for old pods to go
	// ([OldPodsRunning]); upstream syncs the status and ends the pass.
	OldPodsRunning bool
	// CreateNewReplicaSet is true when the old pods are gone and there is no
	// new ReplicaSet yet: the caller creates [NewReplicaSet] (already sized
	// to D for Recreate), then continues as after a scale-up.
	CreateNewReplicaSet bool
}

// Scaled reports whether upstream ends the pass after a status sync,
// without revision-history cleanup. When false, the caller runs [Cleanup]
// if DeploymentComplete(d, d.Status) and then [SyncStatus].
func (s RecreateStep) Scaled() bool { return s.ScaledOld || s.OldPodsRunning }

// Recreate decides one step of a Recreate rollout (upstream
// rolloutRecreate, scaleDownOldReplicaSetsForRecreate,
// scaleUpNewReplicaSetForRecreate):
//
//  1. every active old ReplicaSet is scaled to 0, in the order given;
//  2. otherwise, while [OldPodsRunning] or [OldStatusPending], nothing
//     happens;
//  3. otherwise the new ReplicaSet is created if missing, or scaled to D.
//
// Deviation (an upstream race fixed): upstream waits only while
// [OldPodsRunning], which trusts an old ReplicaSet's status.replicas even
// when the ReplicaSet controller has not yet reported on the scale-down
// (status.observedGeneration behind metadata.generation): a status
// written before it, or from a pod cache that had not yet seen the pods
// that controller had just created, reads 0 while old pods run, and the
// new ReplicaSet starts beside them. Recreate also waits while
// [OldStatusPending].
//
// podsByRS maps ReplicaSet UIDs to their pods (upstream podMap: pods whose
// controller reference is that ReplicaSet, inactive ones included). A
// malformed maxSurge or maxUnavailable is reported as in [MaxSurge].
func Recreate(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podsByRS map[types.UID][]*corev1.Pod) (RecreateStep, error) {
	sc, err := newScaler(d)
	var scales []Scale
	for _, rs := range FilterActive(oldRSs) {
		scales = sc.lazy(scales, rs, specReplicas(rs), 0)
	}
	if len(scales) > 0 {
		return RecreateStep{Scales: scales, ScaledOld: true}, err
	}
	if OldPodsRunning(newRS, oldRSs, podsByRS) || (OldStatusPending(oldRSs) && !testhooks.TrustOldStatus.Load()) {
		return RecreateStep{OldPodsRunning: true}, err
	}
	if newRS == nil {
		return RecreateStep{CreateNewReplicaSet: true}, err
	}
	return RecreateStep{Scales: sc.lazy(nil, newRS, specReplicas(newRS), desired(d))}, err
}

// OldStatusPending reports whether the status of some old ReplicaSet has
// not observed its current generation (status.observedGeneration <
// metadata.generation): its status.replicas may still count pods as they
// were before the scale-down, or before pods its controller has created
// were seen. Nil ReplicaSets are skipped. Upstream has no such check (see
// [Recreate]).
func OldStatusPending(oldRSs []*appsv1.ReplicaSet) bool {
	for _, rs := range oldRSs {
		if rs != nil && rs.Status.ObservedGeneration < rs.Generation {
			return true
		}
	}
	return false
}

// OldPodsRunning reports whether a Recreate rollout must still wait
// (upstream oldPodsRunning): some old ReplicaSet reports status.replicas,
// or a pod of any ReplicaSet other than newRS is in a phase other than
// Succeeded or Failed (Pending, Running, Unknown and "" all count, even
// while terminating). Nil pods are skipped.
func OldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podsByRS map[types.UID][]*corev1.Pod) bool {
	if TotalActualReplicas(oldRSs) > 0 {
		return true
	}
	for uid, pods := range podsByRS {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range pods {
			if p == nil {
				continue
			}
			switch p.Status.Phase {
			case corev1.PodFailed, corev1.PodSucceeded:
			default:
				return true
			}
		}
	}
	return false
}
