package planner

import (
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// ViolationCode classifies a [Violation].
type ViolationCode string

// The invariants [Check] verifies.
const (
	// SurgeExceeded: the controller grew the ReplicaSets to more than
	// spec.replicas + maxSurge pods in total.
	SurgeExceeded ViolationCode = "SurgeExceeded"
	// UnavailableExceeded: the controller scaled down so that fewer than
	// spec.replicas − maxUnavailable pods can remain available.
	UnavailableExceeded ViolationCode = "UnavailableExceeded"
	// RevisionDecreased: a ReplicaSet's or the Deployment's revision went
	// down, or a ReplicaSet appeared with a revision not above every
	// revision seen before.
	RevisionDecreased ViolationCode = "RevisionDecreased"
	// OldScaledUp: an old ReplicaSet grew while the rollout went forward.
	OldScaledUp ViolationCode = "OldScaledUp"
	// CompleteNotReported: the status shows the rollout complete but the
	// Progressing condition is not True/NewReplicaSetAvailable.
	CompleteNotReported ViolationCode = "CompleteNotReported"
)

// Violation is one broken invariant at one step of a [Trace].
type Violation struct {
	// Step indexes the trace; Time is that step's.
	Step int
	Time time.Time
	Code ViolationCode
	// Message explains the violation with its numbers.
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("step %d: %s: %s", v.Step, v.Code, v.Message)
}

// Check verifies the invariants of a rollout at every step of trace and
// returns the violations, in step order (nil when there are none). d gives
// the strategy (maxSurge, maxUnavailable) and the progress deadline; the
// replica count and generation come from each step, since they may
// change along the trace. The bounds are resolved with rollout.MaxSurge
// and rollout.MinAvailable, as the controller resolves them: a malformed
// value counts as upstream counts it.
//
// The invariants, and the tolerance each needs:
//
//   - Surge: Σ spec.replicas ≤ replicas + maxSurge. Only a step where the
//     sum grew is checked — a sum already above the bound because
//     spec.replicas went down is the controller's starting point, not its
//     doing — and steps with [Step.ScalingEvent] are exempt: proportional
//     scaling rounds each ReplicaSet's share and may briefly overshoot
//     while replicas changes (upstream's e2e tests allow the same breach).
//   - Unavailability: the controller never scales down so far that fewer
//     than replicas − maxUnavailable pods can stay available. Observed
//     availability falls below the bound all the time for reasons the
//     controller does not control (pods crash, a new Deployment starts
//     at 0), so only steps where some ReplicaSet shrank are checked, and
//     the availability the scale-down leaves is predicted as the
//     controller sees it: Σ min(spec now, available at the previous step)
//     — the ReplicaSet controller deletes unavailable pods first. It is a
//     violation when that is below the bound and below the previous
//     availability. Scaling events are exempt (a lower replicas lowers the
//     bound after the fact), and so is Recreate, whose bound is 0.
//   - Revisions only increase: per ReplicaSet, for the Deployment, and a
//     ReplicaSet first seen with a revision is above every revision seen
//     before it (revision 0, an unannotated ReplicaSet, is skipped).
//   - No old ReplicaSet grows, except in a scaling event (proportional
//     scaling grows old ones too). A rollback makes the restored
//     ReplicaSet the new one, so it may grow. Nor may one grow that was the
//     new ReplicaSet of the generation the status says the controller last
//     observed, while a newer generation is not yet observed: a controller
//     that has not seen the template change yet (its cache is behind, on
//     a real cluster as here) still rolls the previous template forward.
//   - Completion: a status with every replica updated and available and
//     the current generation observed implies Progressing =
//     True/NewReplicaSetAvailable, when d has a progress deadline. Paused
//     steps and scaling events are exempt: upstream's paused and scaling
//     passes recompute the counts without touching Progressing.
//
// Check is pure and does not modify its arguments.
func Check(trace Trace, d *appsv1.Deployment) []Violation {
	var out []Violation
	maxRev := int64(0)
	seen := map[string]bool{}
	newAt := map[string]int64{} // the last generation at which a ReplicaSet was the new one
	for k, st := range trace {
		add := func(code ViolationCode, format string, args ...any) {
			out = append(out, Violation{Step: k, Time: st.Time, Code: code, Message: fmt.Sprintf(format, args...)})
		}
		dk := at(d, st)
		surge, minAvail := bounds(dk)
		total, _, _, _ := st.Totals()
		if k > 0 {
			prev := trace[k-1]
			prevTotal, _, prevAvail, _ := prev.Totals()
			if !st.ScalingEvent && total > prevTotal && total > st.Replicas+surge {
				add(SurgeExceeded, "%d pods specified > %d replicas + %d maxSurge", total, st.Replicas, surge)
			}
			if !st.ScalingEvent && shrank(prev, st) {
				if left := predictedAvailable(prev, st); left < minAvail && left < prevAvail {
					add(UnavailableExceeded, "scale-down leaves at most %d available < %d minimum (%d replicas − %d maxUnavailable)",
						left, minAvail, st.Replicas, st.Replicas-minAvail)
				}
			}
			if st.Revision < prev.Revision {
				add(RevisionDecreased, "deployment revision went from %d to %d", prev.Revision, st.Revision)
			}
			for _, rs := range st.ReplicaSets {
				before, ok := prev.ReplicaSet(rs.Name)
				if !ok {
					continue
				}
				if rs.Revision < before.Revision {
					add(RevisionDecreased, "replica set %s went from revision %d to %d", rs.Name, before.Revision, rs.Revision)
				}
				stale := st.Status.ObservedGeneration < st.Generation
				if g, ok := newAt[rs.Name]; ok && stale && g >= st.Status.ObservedGeneration {
					continue // the new one as the controller last saw it
				}
				if !rs.New && !st.ScalingEvent && rs.Spec > before.Spec {
					add(OldScaledUp, "old replica set %s (revision %d) scaled up from %d to %d", rs.Name, rs.Revision, before.Spec, rs.Spec)
				}
			}
		}
		for _, rs := range st.ReplicaSets {
			if !seen[rs.Name] && k > 0 && rs.Revision != 0 && rs.Revision <= maxRev {
				add(RevisionDecreased, "new replica set %s has revision %d, not above %d", rs.Name, rs.Revision, maxRev)
			}
			seen[rs.Name] = true
		}
		for _, rs := range st.ReplicaSets {
			maxRev = max(maxRev, rs.Revision)
			if rs.New {
				newAt[rs.Name] = st.Generation
			}
		}
		if !st.Paused && !st.ScalingEvent && rollout.HasProgressDeadline(dk) && rollout.DeploymentComplete(dk, st.Status) {
			c := rollout.GetCondition(st.Status, appsv1.DeploymentProgressing)
			if c == nil || c.Status != corev1.ConditionTrue || c.Reason != rollout.ReasonNewReplicaSetAvailable {
				add(CompleteNotReported, "all %d replicas updated and available but Progressing is %s", st.Replicas, describeCondition(c))
			}
		}
	}
	return out
}

// at returns d with the replica count and generation of st: a shallow
// copy of its spec (which shares d's strategy, template, …), to be read
// only.
func at(d *appsv1.Deployment, st Step) *appsv1.Deployment {
	dk := &appsv1.Deployment{}
	if d != nil {
		dk.Spec = d.Spec
	}
	r := st.Replicas
	dk.Spec.Replicas = &r
	dk.Generation = st.Generation
	return dk
}

// bounds returns maxSurge and minAvailable for d as the controller
// resolves them. A malformed value gives upstream's numbers (errors wrap
// rollout.ErrIgnoredByUpstream), which are exactly what the controller
// acted on, so they are the right bounds to hold it to.
func bounds(d *appsv1.Deployment) (surge, minAvailable int32) {
	surge, err := rollout.MaxSurge(d)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		surge = 0
	}
	minAvailable, err = rollout.MinAvailable(d)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		minAvailable = 0
	}
	return surge, minAvailable
}

// shrank reports whether some ReplicaSet of prev has a lower spec (or is
// gone) in st.
func shrank(prev, st Step) bool {
	for _, before := range prev.ReplicaSets {
		now, _ := st.ReplicaSet(before.Name)
		if now.Spec < before.Spec {
			return true
		}
	}
	return false
}

// predictedAvailable is the availability st's sizes leave if nothing else
// changes since prev: each ReplicaSet keeps min(spec, available) of its
// available pods, since unavailable pods are deleted first.
func predictedAvailable(prev, st Step) int32 {
	var n int32
	for _, rs := range st.ReplicaSets {
		before, ok := prev.ReplicaSet(rs.Name)
		if !ok {
			continue // created in this step: nothing available yet
		}
		n += min(rs.Spec, before.Available)
	}
	return n
}

func describeCondition(c *appsv1.DeploymentCondition) string {
	if c == nil {
		return "missing"
	}
	return fmt.Sprintf("%s/%s", c.Status, c.Reason)
}
