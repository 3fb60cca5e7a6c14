package rollout

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewCondition returns a Deployment condition stamped with now as both
// lastUpdateTime and lastTransitionTime (upstream NewDeploymentCondition,
// which reads the wall clock instead).
func NewCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{
		Type:               t,
		Status:             status,
		LastUpdateTime:     ts,
		LastTransitionTime: ts,
		Reason:             reason,
		Message:            message,
	}
}

// findCondition returns a pointer to the first condition of type t in
// status, or nil. Unlike [GetCondition] it does not copy: the result
// points into status.Conditions and must be treated as read-only.
func findCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	if status == nil {
		return nil
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// GetCondition returns a copy of the first condition of type t in status,
// or nil (upstream GetDeploymentCondition).
func GetCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	c := findCondition(&status, t)
	if c == nil {
		return nil
	}
	cp := *c // declared outside the search: inlined, it stays on the caller's stack
	return &cp
}

// SetCondition returns status with c set (upstream SetDeploymentCondition):
//
//   - if a condition of that type has the same status and reason, nothing
//     changes (its lastUpdateTime is not refreshed);
//   - if only the reason differs, the old lastTransitionTime is kept;
//   - otherwise every condition of that type is removed and c is appended
//     at the end.
//
// The returned status never shares a Conditions backing array with the
// argument when it changed; status itself is not modified.
func SetCondition(status appsv1.DeploymentStatus, c appsv1.DeploymentCondition) appsv1.DeploymentStatus {
	cur := findCondition(&status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return status
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	out := make([]appsv1.DeploymentCondition, 0, len(status.Conditions)+1) // one allocation
	for _, x := range status.Conditions {
		if x.Type != c.Type {
			out = append(out, x)
		}
	}
	status.Conditions = append(out, c)
	return status
}

// RemoveCondition returns status without conditions of type t (upstream
// RemoveDeploymentCondition). As upstream, an empty list becomes nil, and
// a list that loses a condition is a new slice; one with no condition of
// type t is returned as it is (shared with the argument: treat it as
// read-only).
func RemoveCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) appsv1.DeploymentStatus {
	if findCondition(&status, t) == nil {
		if len(status.Conditions) == 0 {
			status.Conditions = nil
		}
		return status
	}
	status.Conditions = withoutCondition(status.Conditions, t)
	return status
}

// withoutCondition is upstream filterOutCondition: a new slice (nil if
// empty) without conditions of type t.
func withoutCondition(cs []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range cs {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// ReplicaSetToDeploymentCondition promotes a ReplicaSet condition to a
// Deployment condition; both timestamps come from the ReplicaSet
// condition's lastTransitionTime (upstream ReplicaSetToDeploymentCondition).
func ReplicaSetToDeploymentCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               appsv1.DeploymentConditionType(c.Type),
		Status:             c.Status,
		LastTransitionTime: c.LastTransitionTime,
		LastUpdateTime:     c.LastTransitionTime,
		Reason:             c.Reason,
		Message:            c.Message,
	}
}

// CreatedNewReplicaSetCondition is Progressing=True/NewReplicaSetCreated,
// set after the new ReplicaSet is created (only with a progress deadline).
func CreatedNewReplicaSetCondition(rsName string, now time.Time) appsv1.DeploymentCondition {
	return NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
		fmt.Sprintf("Created new replica set %q", rsName), now)
}

// FoundNewReplicaSetCondition is Progressing=True/FoundNewReplicaSet, set
// when the new ReplicaSet exists but d has no Progressing condition yet
// (only with a progress deadline).
func FoundNewReplicaSetCondition(rsName string, now time.Time) appsv1.DeploymentCondition {
	return NewCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
		fmt.Sprintf("Found new replica set %q", rsName), now)
}

// failedCreateCondition is Progressing=False/ReplicaSetCreateError, set
// when creating the new ReplicaSet failed (only with a progress deadline).
// Its message is also the Warning event's message.
func failedCreateCondition(rsName string, err error, now time.Time) appsv1.DeploymentCondition {
	return NewCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate,
		fmt.Sprintf("Failed to create new replica set %q: %v", rsName, err), now)
}

// PauseCondition returns the Progressing condition that records a pause
// or resume of d, and whether there is one to set (upstream
// checkPausedConditions, which sets it): set it with [SetCondition].
// Without a progress deadline, or when the condition already says
// ProgressDeadlineExceeded, there is none. Paused and no DeploymentPaused
// reason → Unknown/DeploymentPaused; not paused but DeploymentPaused →
// Unknown/DeploymentResumed.
func PauseCondition(d *appsv1.Deployment, now time.Time) (appsv1.DeploymentCondition, bool) {
	if d == nil || !HasProgressDeadline(d) {
		return appsv1.DeploymentCondition{}, false
	}
	cond := findCondition(&d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonProgressDeadlineExceeded {
		return appsv1.DeploymentCondition{}, false
	}
	pausedCond := cond != nil && cond.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		return NewCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", now), true
	case !d.Spec.Paused && pausedCond:
		return NewCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", now), true
	}
	return appsv1.DeploymentCondition{}, false
}
