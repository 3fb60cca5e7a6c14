package rollout

import (
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentComplete reports whether st shows every desired replica
// updated and available with no old replica left, for d's current
// generation (upstream DeploymentComplete): updated == replicas ==
// available == D and observedGeneration ≥ d.generation.
func DeploymentComplete(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	D := desired(d)
	var gen int64
	if d != nil {
		gen = d.Generation
	}
	return st.UpdatedReplicas == D && st.Replicas == D && st.AvailableReplicas == D && st.ObservedGeneration >= gen
}

// DeploymentProgressing reports whether st shows progress over d.Status
// (upstream DeploymentProgressing): more updated replicas, fewer old ones
// (replicas − updated), more ready or more available.
func DeploymentProgressing(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	var old appsv1.DeploymentStatus
	if d != nil {
		old = d.Status
	}
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// DeploymentTimedOut reports whether d has made no progress for longer
// than its deadline, judged from the Progressing condition of st, the
// status being computed (upstream DeploymentTimedOut, with now in place of
// the wall clock). False without a deadline, without a Progressing
// condition, or when its reason is NewReplicaSetAvailable; true when the
// reason is already ProgressDeadlineExceeded; otherwise whether
// lastUpdateTime + progressDeadlineSeconds is strictly before now.
func DeploymentTimedOut(d *appsv1.Deployment, st appsv1.DeploymentStatus, now time.Time) bool {
	if !HasProgressDeadline(d) {
		return false
	}
	c := findCondition(&st, appsv1.DeploymentProgressing)
	switch {
	case c == nil, c.Reason == ReasonNewReplicaSetAvailable:
		return false
	case c.Reason == ReasonProgressDeadlineExceeded:
		return true
	}
	return c.LastUpdateTime.Add(deadline(d)).Before(now)
}

// deadline is progressDeadlineSeconds as a Duration; callers check
// HasProgressDeadline first.
func deadline(d *appsv1.Deployment) time.Duration {
	return time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
}

// ProgressCheck says when a Deployment whose status did not change must be
// looked at again to notice a missed progress deadline (upstream
// requeueStuckDeployment, which enqueues instead of returning it).
type ProgressCheck struct {
	// Needed is false when no check is due: no deadline, no Progressing
	// condition, the rollout is complete, or it has already timed out
	// (upstream returns −1).
	Needed bool
	// RateLimited is true when less than a second is left: upstream
	// requeues the Deployment now, through the rate limiter (and returns 0).
	RateLimited bool
	// Remaining is lastUpdateTime + progressDeadlineSeconds − now (upstream's
	// return value) when Needed and not RateLimited.
	Remaining time.Duration
	// After is the delay upstream passes to AddAfter: Remaining + 1 s, the
	// extra second absorbing clock skew (kubernetes#39785).
	After time.Duration
}

// Upstream returns the value upstream requeueStuckDeployment returns: −1
// (no check), 0 (now, rate-limited) or the remaining time.
func (p ProgressCheck) Upstream() time.Duration {
	switch {
	case !p.Needed:
		return -1
	case p.RateLimited:
		return 0
	}
	return p.Remaining
}

// nextProgressCheck computes the [ProgressCheck] for d given st, the status
// just computed for it. Upstream runs it only when st equals d.Status;
// [SyncStatus] does the same.
func nextProgressCheck(d *appsv1.Deployment, st appsv1.DeploymentStatus, now time.Time) ProgressCheck {
	if !HasProgressDeadline(d) {
		return ProgressCheck{}
	}
	cur := findCondition(&d.Status, appsv1.DeploymentProgressing)
	if cur == nil || DeploymentComplete(d, st) || cur.Reason == ReasonProgressDeadlineExceeded {
		return ProgressCheck{}
	}
	after := cur.LastUpdateTime.Add(deadline(d)).Sub(now)
	if after < time.Second {
		return ProgressCheck{Needed: true, RateLimited: true}
	}
	return ProgressCheck{Needed: true, Remaining: after, After: after + time.Second}
}

// StatusUpdate is the outcome of [SyncStatus].
type StatusUpdate struct {
	// Status is the Deployment status to write.
	Status appsv1.DeploymentStatus
	// Changed is whether Status differs from d.Status (reflect.DeepEqual,
	// as upstream); only then is an UpdateStatus call needed.
	Changed bool
	// Check is the progress check to schedule; it is only computed when
	// !Changed, as upstream.
	Check ProgressCheck
}

// SyncStatus computes the status the Deployment controller writes at the
// end of a sync, conditions included, and whether it must be written
// (upstream syncRolloutStatus, with the gates at their v1.37 defaults;
// [StatusOptions.SyncStatus] switches them). Of this package's status
// functions it is the one that answers "what will the controller write?";
// [Status] answers "is the rollout done?" as kubectl does:
//
//  1. st = [CalculateStatus]; without a progress deadline, Progressing is
//     removed.
//  2. Unless the rollout was already complete (st.replicas == st.updated
//     and d's Progressing reason is NewReplicaSetAvailable), the first
//     match sets Progressing: [DeploymentComplete] → True/
//     NewReplicaSetAvailable; [DeploymentProgressing] → True/
//     ReplicaSetUpdated, always with a fresh lastUpdateTime (and d's
//     lastTransitionTime if it was True); [DeploymentTimedOut] → False/
//     ProgressDeadlineExceeded.
//  3. The first of [ReplicaFailures] is set, or ReplicaFailure is removed.
//  4. If nothing changed, nextProgressCheck says when to look again.
//
// Messages name newRS ("ReplicaSet %q ...") or, without one, d. The status
// is computed from the ReplicaSets as given: upstream passes the objects
// read at the start of the sync, before any scaling in the same pass.
func SyncStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (StatusUpdate, error) {
	return StatusOptions{}.SyncStatus(d, allRSs, newRS, now)
}

// SyncStatus is the package's [SyncStatus] with the gates o sets (see
// [StatusOptions.CalculateStatus]).
func (o StatusOptions) SyncStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (StatusUpdate, error) {
	if d == nil {
		d = &appsv1.Deployment{}
	}
	st, err := o.CalculateStatus(d, allRSs, newRS, now)
	hasDeadline := HasProgressDeadline(d)
	if !hasDeadline {
		st = RemoveCondition(st, appsv1.DeploymentProgressing)
	}
	cur := findCondition(&d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasDeadline && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case DeploymentComplete(d, st):
			st = SetCondition(st, NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, subject+" has successfully progressed.", now))
		case DeploymentProgressing(d, st):
			c := NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject+" is progressing.", now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				st = RemoveCondition(st, appsv1.DeploymentProgressing)
			}
			st = SetCondition(st, c)
		case DeploymentTimedOut(d, st, now):
			st = SetCondition(st, NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, subject+" has timed out progressing.", now))
		}
	}
	if failures := ReplicaFailures(allRSs, newRS); len(failures) > 0 {
		st = SetCondition(st, failures[0])
	} else {
		st = RemoveCondition(st, appsv1.DeploymentReplicaFailure)
	}
	out := StatusUpdate{Status: st, Changed: !statusEqual(&d.Status, &st)}
	if !out.Changed {
		out.Check = nextProgressCheck(d, st, now)
	}
	return out, err
}

// statusEqual is reflect.DeepEqual(*a, *b) for Deployment statuses,
// without boxing them (a nil and an empty condition list differ, as
// there).
func statusEqual(a, b *appsv1.DeploymentStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Replicas != b.Replicas || a.UpdatedReplicas != b.UpdatedReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas || a.UnavailableReplicas != b.UnavailableReplicas ||
		!int32PtrEqual(a.TerminatingReplicas, b.TerminatingReplicas) || !int32PtrEqual(a.CollisionCount, b.CollisionCount) ||
		(a.Conditions == nil) != (b.Conditions == nil) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := &a.Conditions[i], &b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!timeDeepEqual(&x.LastUpdateTime, &y.LastUpdateTime) || !timeDeepEqual(&x.LastTransitionTime, &y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// timeDeepEqual is reflect.DeepEqual for two times; == settles the usual
// case (same instant, same location pointer).
func timeDeepEqual(a, b *metav1.Time) bool { return a.Time == b.Time || reflect.DeepEqual(a, b) }

func int32PtrEqual(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
