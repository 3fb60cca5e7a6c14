package replicaset

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/features"
)

// CalculateStatus returns the status rs should have given its active and
// terminating claimed pods, the error of the last create/delete round
// (manageErr, nil on success) and the current time. Neither rs nor the pods
// are modified (upstream replicaset calculateStatus, with the
// DeploymentReplicaSetTerminatingReplicas gate at its v1.37 default, on;
// calculateStatusWith takes the gates).
//
// It starts from rs.Status, so ObservedGeneration and unrelated conditions
// carry over; needsStatusUpdate and statusToWrite set
// ObservedGeneration. The counts are:
//   - Replicas: len(active);
//   - FullyLabeledReplicas: active pods carrying every template label;
//   - ReadyReplicas: active pods whose Ready condition is True;
//   - AvailableReplicas: ready pods available per [IsPodAvailable];
//   - TerminatingReplicas: len(terminating), never nil (nil, and
//     terminating ignored, with the gate off).
//
// The result may share memory with rs.Status (the conditions, and the
// TerminatingReplicas pointer when its value is unchanged): treat it as
// read-only, or DeepCopy it.
//
// The ReplicaFailure condition is added (status True, reason FailedCreate
// when active < spec.replicas, FailedDelete when active > spec.replicas,
// else "", message manageErr.Error(), LastTransitionTime now) when manageErr
// is set and no such condition exists; it is removed when manageErr is nil;
// an existing condition is kept as is when there is a new error.
//
// A nil rs, or a nil pod in active or terminating, is an error.
func CalculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time) (appsv1.ReplicaSetStatus, error) {
	if err := checkRS("CalculateStatus", rs); err != nil {
		return appsv1.ReplicaSetStatus{}, err
	}
	if err := checkPods("CalculateStatus", "active", active); err != nil {
		return appsv1.ReplicaSetStatus{}, err
	}
	if err := checkPods("CalculateStatus", "terminating", terminating); err != nil {
		return appsv1.ReplicaSetStatus{}, err
	}
	return calculateStatus(rs, active, terminating, manageErr, now, true), nil
}

// calculateStatusWith is [CalculateStatus] with the feature gates of
// gates: with DeploymentReplicaSetTerminatingReplicas off,
// status.terminatingReplicas is nil, as upstream writes it then (and a
// count stored while the gate was on is cleared).
func calculateStatusWith(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time, gates features.Gates) (appsv1.ReplicaSetStatus, error) {
	if err := gates.Validate(); err != nil {
		return appsv1.ReplicaSetStatus{}, fmt.Errorf("replicaset: calculateStatusWith: %w", err)
	}
	st, err := CalculateStatus(rs, active, terminating, manageErr, now)
	if err == nil && !gates.Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		st.TerminatingReplicas = nil
	}
	return st, err
}

// calculateStatus is [CalculateStatus] without the checks; terminatingOn
// is the DeploymentReplicaSetTerminatingReplicas gate.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time, terminatingOn bool) appsv1.ReplicaSetStatus {
	var c podCounts
	want := newLabelSet(rs.Spec.Template.Labels)
	for _, p := range active {
		c.add(p, want.subsetOf(p.Labels), rs.Spec.MinReadySeconds, now)
	}
	return statusFromCounts(rs, c, terminating, manageErr, now, terminatingOn)
}

// podCounts tallies the active pods of a ReplicaSet for its status.
type podCounts struct {
	active, labeled, ready, available int32
}

// add counts the active pod p, which carries every template label if
// labeled, with availability judged at now.
func (c *podCounts) add(p *corev1.Pod, labeled bool, minReadySeconds int32, now time.Time) {
	c.active++
	if labeled {
		c.labeled++
	}
	if cond := readyCondition(p); cond != nil && cond.Status == corev1.ConditionTrue {
		c.ready++
		if availableSince(cond, minReadySeconds, now) {
			c.available++
		}
	}
}

// addFact is add for an active pod known by its facts; available tells
// whether it has been ready for minReadySeconds, should it be ready.
func (c *podCounts) addFact(f *podFact, available bool) {
	c.active++
	if f.has(factLabeled) {
		c.labeled++
	}
	if f.has(factReady) {
		c.ready++
		if available {
			c.available++
		}
	}
}

// statusFromCounts is [CalculateStatus] for active pods already counted;
// terminatingOn is the DeploymentReplicaSetTerminatingReplicas gate.
func statusFromCounts(rs *appsv1.ReplicaSet, c podCounts, terminating []*corev1.Pod, manageErr error, now time.Time, terminatingOn bool) appsv1.ReplicaSetStatus {
	st := rs.Status
	hasFailure := replicaFailure(rs.Status) >= 0
	switch {
	case manageErr != nil && !hasFailure:
		reason := ""
		if d := int(c.active) - replicas(rs); d < 0 {
			reason = ReasonFailedCreate
		} else if d > 0 {
			reason = ReasonFailedDelete
		}
		st.Conditions = append(withoutReplicaFailure(st.Conditions), appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && hasFailure:
		st.Conditions = withoutReplicaFailure(st.Conditions)
	}
	st.Replicas = c.active
	st.FullyLabeledReplicas = c.labeled
	st.ReadyReplicas = c.ready
	st.AvailableReplicas = c.available
	if !terminatingOn {
		st.TerminatingReplicas = nil
	} else if n := int32(len(terminating)); st.TerminatingReplicas == nil || *st.TerminatingReplicas != n {
		st.TerminatingReplicas = new(int32) // allocated only when it changes
		*st.TerminatingReplicas = n
	}
	return st
}

// needsStatusUpdate reports whether newStatus differs from rs.Status in a
// way upstream writes: any count, TerminatingReplicas (nil ≠ 0), the
// conditions (deep equality, so nil ≠ empty), or an ObservedGeneration
// behind rs.Generation (the negation of upstream updateReplicaSetStatus's
// no-op check). newStatus.ObservedGeneration is ignored. With a nil rs or
// newStatus there is nothing to write: false.
func needsStatusUpdate(rs *appsv1.ReplicaSet, newStatus *appsv1.ReplicaSetStatus) bool {
	if rs == nil || newStatus == nil {
		return false
	}
	old := &rs.Status
	return old.Replicas != newStatus.Replicas ||
		old.FullyLabeledReplicas != newStatus.FullyLabeledReplicas ||
		old.ReadyReplicas != newStatus.ReadyReplicas ||
		old.AvailableReplicas != newStatus.AvailableReplicas ||
		!int32PtrEqual(old.TerminatingReplicas, newStatus.TerminatingReplicas) ||
		rs.Generation != old.ObservedGeneration ||
		!conditionsEqual(old.Conditions, newStatus.Conditions)
}

// statusDeleting is the status of rs with the pods whose UIDs are in
// deleting (sorted) moved from active to terminating: they are being
// deleted, whether or not the cache has seen it. terminatingOn is the
// DeploymentReplicaSetTerminatingReplicas gate.
func statusDeleting(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, deleting []types.UID, now time.Time, terminatingOn bool) appsv1.ReplicaSetStatus {
	kept := make([]*corev1.Pod, 0, len(active))
	term := slices.Clone(terminating)
	for _, p := range active {
		if _, found := slices.BinarySearch(deleting, p.UID); found {
			term = append(term, p)
		} else {
			kept = append(kept, p)
		}
	}
	return calculateStatus(rs, kept, term, nil, now, terminatingOn)
}

// heldStatus is statusToWrite for a sync whose pod cache is behind the
// controller's own creates or deletes: the counts and conditions of
// newStatus, with the stored ObservedGeneration kept; false when that
// changes nothing.
func heldStatus(rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) (appsv1.ReplicaSetStatus, bool) {
	newStatus.ObservedGeneration = rs.Status.ObservedGeneration
	old := &rs.Status
	changed := old.Replicas != newStatus.Replicas ||
		old.FullyLabeledReplicas != newStatus.FullyLabeledReplicas ||
		old.ReadyReplicas != newStatus.ReadyReplicas ||
		old.AvailableReplicas != newStatus.AvailableReplicas ||
		!int32PtrEqual(old.TerminatingReplicas, newStatus.TerminatingReplicas) ||
		!conditionsEqual(old.Conditions, newStatus.Conditions)
	return newStatus, changed
}

// statusToWrite returns newStatus with ObservedGeneration set to
// rs.Generation, and whether it needs writing at all (see
// needsStatusUpdate).
func statusToWrite(rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) (appsv1.ReplicaSetStatus, bool) {
	if !needsStatusUpdate(rs, &newStatus) { // also for a nil rs
		return newStatus, false
	}
	newStatus.ObservedGeneration = rs.Generation
	return newStatus, true
}

// nextAvailabilityCheck returns how long after now the earliest ready but
// not yet available pod of pods becomes available, and false when no pod is
// waiting out minReadySeconds. The waiting pod is chosen at evaluatedAt (the
// time the status was computed, so no pod counted unavailable there is
// missed) and its delay measured from now; if it is already due at now the
// delay is 0 (upstream controller.FindMinNextPodAvailabilityCheck with
// lastOwnerStatusEvaluation = evaluatedAt and clock.Now() = now).
func nextAvailabilityCheck(pods []*corev1.Pod, minReadySeconds int32, evaluatedAt, now time.Time) (time.Duration, bool) {
	var first *corev1.Pod
	var best time.Duration
	for _, p := range pods {
		if d, ok := untilAvailable(p, minReadySeconds, evaluatedAt); ok && (first == nil || d < best) {
			first, best = p, d
		}
	}
	if first == nil {
		return 0, false
	}
	if d, ok := untilAvailable(first, minReadySeconds, now); ok {
		return d, true
	}
	return 0, true
}

// untilAvailable returns the positive time left at now before the ready pod
// p becomes available (upstream nextPodAvailabilityCheck); false for a nil
// p.
func untilAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) (time.Duration, bool) {
	if minReadySeconds <= 0 {
		return 0, false
	}
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return 0, false
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	return d, d > 0
}

// availabilityRequeue returns the requeue delay upstream's syncReplicaSet
// schedules after writing status: none unless minReadySeconds > 0 and some
// ready pods are not yet available; then nextAvailabilityCheck, falling
// back to minReadySeconds. A due check yields the smallest positive delay,
// because a zero [reconcile.Result.RequeueAfter] means "no requeue" (upstream's
// AddAfter(key, 0) adds at once). A nil rs or status needs no requeue: 0.
// Nil pods are never waiting.
func availabilityRequeue(rs *appsv1.ReplicaSet, status *appsv1.ReplicaSetStatus, active []*corev1.Pod, evaluatedAt, now time.Time) time.Duration {
	if rs == nil || status == nil {
		return 0
	}
	minReady := rs.Spec.MinReadySeconds
	if minReady <= 0 || status.ReadyReplicas == status.AvailableReplicas {
		return 0
	}
	d, ok := nextAvailabilityCheck(active, minReady, evaluatedAt, now)
	if !ok {
		return time.Duration(minReady) * time.Second
	}
	return max(d, time.Nanosecond)
}

// labelSet is a label map flattened once, so that testing many pods
// against it does not iterate the map (and seed its iterator) per pod.
// Maps of up to len(small) entries are held inline; larger ones are
// iterated as maps.
type labelSet struct {
	small [8]struct{ k, v string }
	n     int
	big   map[string]string
}

func newLabelSet(m map[string]string) labelSet {
	var s labelSet
	if len(m) > len(s.small) {
		s.big = m
		return s
	}
	for k, v := range m {
		s.small[s.n].k, s.small[s.n].v = k, v
		s.n++
	}
	return s
}

// subsetOf reports whether got contains every key/value of s.
func (s *labelSet) subsetOf(got map[string]string) bool {
	if s.big != nil {
		for k, v := range s.big {
			if g, ok := got[k]; !ok || g != v {
				return false
			}
		}
		return true
	}
	for i := range s.n {
		if g, ok := got[s.small[i].k]; !ok || g != s.small[i].v {
			return false
		}
	}
	return true
}

func replicaFailure(st appsv1.ReplicaSetStatus) int {
	for i := range st.Conditions {
		if st.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
			return i
		}
	}
	return -1
}

// withoutReplicaFailure returns a new slice without ReplicaFailure
// conditions; nil when nothing is left, as upstream's filterOutCondition.
func withoutReplicaFailure(conds []appsv1.ReplicaSetCondition) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range conds {
		if c.Type != appsv1.ReplicaSetReplicaFailure {
			out = append(out, c)
		}
	}
	return out
}

func int32PtrEqual(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// conditionsEqual is reflect.DeepEqual on condition slices, with a fast
// path for the common case of the very same slice.
func conditionsEqual(a, b []appsv1.ReplicaSetCondition) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) && (a == nil) == (b == nil) {
		return true
	}
	return reflect.DeepEqual(a, b)
}
