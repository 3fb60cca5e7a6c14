package deployment

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// syncRolloutStatus is upstream syncRolloutStatus: the status a rollout
// step ends with, Progressing and ReplicaFailure conditions included,
// computed from the ReplicaSets as they are after this plan's writes.
// When it equals the working status, the progress-deadline requeue is
// decided instead (upstream requeueStuckDeployment).
func (s *syncer) syncRolloutStatus() error {
	u, err := s.statusOpts.SyncStatus(s.d, s.all(), s.newRS(), s.now.Time)
	if err != nil && !isIgnored(err) {
		return err
	}
	if u.Changed {
		s.setStatus(u.Status)
		return nil
	}
	s.requeueAfter = requeueAfter(s.d, u.Check)
	return nil
}

// requeueAfter turns upstream's progress check into a delay.
//
// Two deliberate deviations from requeueStuckDeployment:
//   - with less than a second left, upstream requeues through the rate
//     limiter (polling every few milliseconds); we wait one second, by
//     which time the deadline has passed;
//   - when the Progressing reason is NewReplicaSetAvailable, no outcome
//     depends on time (DeploymentTimedOut is false for that reason), so we
//     do not requeue, where upstream would poll through the rate limiter
//     for as long as a once-complete Deployment stays short of replicas.
func requeueAfter(d *appsv1.Deployment, c rollout.ProgressCheck) time.Duration {
	if !c.Needed {
		return 0
	}
	if cur := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing); cur != nil && cur.Reason == rollout.ReasonNewReplicaSetAvailable {
		return 0
	}
	if c.RateLimited {
		return time.Second
	}
	return c.After
}

// syncDeploymentStatus is upstream syncDeploymentStatus, used by paused
// Deployments, scaling events and Deployments being deleted: counts and
// the Available condition only, Progressing untouched, no requeue.
func (s *syncer) syncDeploymentStatus() {
	st, _ := s.statusOpts.CalculateStatus(s.d, s.all(), s.newRS(), s.now.Time) // a malformed maxUnavailable reads as 0, as upstream
	s.setStatus(st)
}

// statusEqual reports whether two statuses are the same, timestamps
// compared as instants.
func statusEqual(a, b *appsv1.DeploymentStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Replicas != b.Replicas || a.UpdatedReplicas != b.UpdatedReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas || a.UnavailableReplicas != b.UnavailableReplicas ||
		!int32PtrEqual(a.TerminatingReplicas, b.TerminatingReplicas) || !int32PtrEqual(a.CollisionCount, b.CollisionCount) ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := &a.Conditions[i], &b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastUpdateTime.Equal(&y.LastUpdateTime) || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

func int32PtrEqual(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
