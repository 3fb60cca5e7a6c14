package rollout

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// StatusOptions are what kube-controller-manager's feature gates change in
// a Deployment's status. The zero value is v1.37's defaults, which
// [CalculateStatus] and [SyncStatus] use; call their methods of the same
// names on a StatusOptions to switch a gate:
//
//	st, err := rollout.StatusOptions{NoTerminatingReplicas: true}.SyncStatus(d, rss, newRS, now)
type StatusOptions struct {
	// NoTerminatingReplicas leaves status.terminatingReplicas nil, as
	// upstream's calculateStatus does with the
	// DeploymentReplicaSetTerminatingReplicas gate off (its default in
	// 1.33 and 1.34).
	NoTerminatingReplicas bool
}

// CalculateStatus computes the counts of d's status and its Available
// condition from its ReplicaSets (upstream deployment calculateStatus,
// with the DeploymentReplicaSetTerminatingReplicas gate at its v1.37
// default, on; [StatusOptions.CalculateStatus] switches it). It is the
// first half of [SyncStatus], which adds the Progressing and
// ReplicaFailure conditions: to know what the controller writes, call
// SyncStatus; to know whether a rollout is done, [Status].
//
//   - observedGeneration = d.generation; collisionCount is copied;
//   - replicas, readyReplicas, availableReplicas: sums over allRSs' status;
//   - updatedReplicas: newRS's status.replicas (0 without newRS);
//   - unavailableReplicas: max(0, Σ spec.replicas − available) — the sum of
//     the ReplicaSets' spec, not d's spec.replicas;
//   - terminatingReplicas: [TotalTerminatingReplicas], nil when unknown;
//   - conditions: d's, with Available set True/MinimumReplicasAvailable if
//     available ≥ D − [MaxUnavailable], else False/MinimumReplicasUnavailable
//     (see [SetCondition] for the timestamp rules; a new condition is
//     stamped with now).
//
// allRSs should include newRS; nil entries are skipped. d is not modified,
// and the result shares no memory with it. A malformed maxSurge or
// maxUnavailable is reported as in [MaxUnavailable].
func CalculateStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (appsv1.DeploymentStatus, error) {
	return StatusOptions{}.CalculateStatus(d, allRSs, newRS, now)
}

// CalculateStatus is the package's [CalculateStatus] with the gates o
// sets: with o.NoTerminatingReplicas, terminatingReplicas is nil.
func (o StatusOptions) CalculateStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (appsv1.DeploymentStatus, error) {
	if d == nil {
		d = &appsv1.Deployment{}
	}
	available := TotalAvailableReplicas(allRSs)
	unavailable := TotalReplicas(allRSs) - available
	if unavailable < 0 {
		unavailable = 0
	}
	var updated int32
	if newRS != nil {
		updated = newRS.Status.Replicas
	}
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            TotalActualReplicas(allRSs),
		UpdatedReplicas:     updated,
		ReadyReplicas:       TotalReadyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
	}
	if !o.NoTerminatingReplicas {
		st.TerminatingReplicas = TotalTerminatingReplicas(allRSs)
	}
	if d.Status.CollisionCount != nil {
		n := *d.Status.CollisionCount
		st.CollisionCount = &n
	}
	// Conditions hold no pointers a deep copy would follow (metav1.Time's
	// DeepCopy is a value copy): one clone copies them all. None stays nil,
	// as upstream's appends leave it.
	if len(d.Status.Conditions) > 0 {
		st.Conditions = slices.Clone(d.Status.Conditions)
	}
	maxUnavailable, err := MaxUnavailable(d)
	if available >= desired(d)-maxUnavailable {
		st = SetCondition(st, NewCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		st = SetCondition(st, NewCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st, err
}

// ReplicaFailures returns the ReplicaFailure conditions to promote to the
// Deployment (upstream getReplicaFailures): newRS's if it has any,
// otherwise those of every ReplicaSet in allRSs, in order. Nil entries are
// skipped.
func ReplicaFailures(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	collect := func(rs *appsv1.ReplicaSet) {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				out = append(out, ReplicaSetToDeploymentCondition(c))
			}
		}
	}
	if newRS != nil {
		collect(newRS)
	}
	if len(out) > 0 {
		return out
	}
	for _, rs := range allRSs {
		if rs != nil {
			collect(rs)
		}
	}
	return out
}
