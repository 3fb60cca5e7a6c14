package planner

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// BlockerCode classifies a [Blocker]. The codes are stable: alert on
// them, not on messages.
type BlockerCode string

// The reasons [Explain] reports, roughly in the order it checks them.
const (
	// SelectingAll: the selector is empty and selects every pod; the
	// controller refuses to act (upstream's SelectingAll warning).
	SelectingAll BlockerCode = "SelectingAll"
	// RollbackPending: a deprecated rollback annotation awaits the
	// controller.
	RollbackPending BlockerCode = "RollbackPending"
	// BeingDeleted: the Deployment has a deletionTimestamp; the controller
	// only updates its status (upstream's status-only sync for a
	// Deployment being deleted): it neither rolls out nor scales.
	BeingDeleted BlockerCode = "BeingDeleted"
	// Paused: spec.paused is set; only scaling happens.
	Paused BlockerCode = "Paused"
	// GenerationNotObserved: the controller has not acted on the latest
	// spec yet (status.observedGeneration < metadata.generation).
	GenerationNotObserved BlockerCode = "GenerationNotObserved"
	// InvalidSpec: the controller rejects the spec (e.g. a malformed
	// maxSurge); Message has its error.
	InvalidSpec BlockerCode = "InvalidSpec"
	// ReplicaFailure: a ReplicaSet (or the Deployment) reports
	// ReplicaFailure, e.g. FailedCreate for an exceeded quota; Reason and
	// Message are the condition's.
	ReplicaFailure BlockerCode = "ReplicaFailure"
	// NewReplicaSetMissing: the new ReplicaSet could not be created
	// (Progressing=False/ReplicaSetCreateError).
	NewReplicaSetMissing BlockerCode = "NewReplicaSetMissing"
	// SurgeLimit: the new ReplicaSet is below spec.replicas but cannot
	// grow: Total ≥ Replicas + MaxSurge (rollout.NewRSNewReplicas).
	SurgeLimit BlockerCode = "SurgeLimit"
	// MinAvailableLimit: old ReplicaSets cannot shrink: Available ≤
	// MinAvailable, or Total − MinAvailable − NewUnavailable ≤ 0 (upstream
	// reconcileOldReplicaSets); Pods says why new pods are unavailable.
	MinAvailableLimit BlockerCode = "MinAvailableLimit"
	// NewPodsUnavailable: the new ReplicaSet has its full size but not
	// every pod is available; Pods says why.
	NewPodsUnavailable BlockerCode = "NewPodsUnavailable"
	// OldPodsRunning: a Recreate rollout waits for the old pods to be
	// gone (rollout.OldPodsRunning); Pods.Terminating counts those
	// already shutting down.
	OldPodsRunning BlockerCode = "OldPodsRunning"
	// ControllerPending: nothing blocks; the controller has a step to
	// take on its next sync (Message names it) or a status to catch up.
	ControllerPending BlockerCode = "ControllerPending"
	// DeadlinePending: the rollout has Remaining until its progress
	// deadline (negative: passed, not yet marked by the controller).
	DeadlinePending BlockerCode = "DeadlinePending"
	// DeadlineExceeded: Progressing=False/ProgressDeadlineExceeded, set
	// -Remaining ago. The controller keeps trying; this is a report.
	DeadlineExceeded BlockerCode = "DeadlineExceeded"
)

// Blocker is one reason a rollout cannot move now, with the numbers
// behind it. Fields that do not apply to the Code are zero.
type Blocker struct {
	Code    BlockerCode
	Message string
	// ReplicaSet names the ReplicaSet concerned, if one is.
	ReplicaSet string
	// Replicas is spec.replicas; Total is Σ spec.replicas of the
	// Deployment's ReplicaSets.
	Replicas, Total int32
	// MaxSurge and MaxUnavailable are resolved as the controller does;
	// MinAvailable = Replicas − MaxUnavailable.
	MaxSurge, MaxUnavailable, MinAvailable int32
	// Available is Σ available of the active ReplicaSets;
	// NewUnavailable is the new ReplicaSet's spec − available.
	Available, NewUnavailable int32
	// Pods are the new ReplicaSet's (old ones', for OldPodsRunning)
	// unavailable pods by cause.
	Pods PodCauses
	// Reason is a condition reason (ReplicaFailure, deadline).
	Reason string
	// Remaining is the time to the progress deadline (negative: past).
	Remaining time.Duration
}

// Explain says why d's rollout cannot move at now, as structured
// [Blocker]s, judged with the controller's own inequalities (package
// rollout's Rolling, Recreate, NewRSNewReplicas, MinAvailable…), so the
// numbers are the ones the controller compares. replicaSets may hold
// every ReplicaSet of the namespace (those d controls are used; all of
// them when d has no UID); pods are matched to ReplicaSets by controller
// UID. A complete rollout has no blocker: the result is empty. Explain is
// pure and does not modify its arguments.
func Explain(d *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) []Blocker {
	if d == nil {
		return nil
	}
	if d.Spec.Selector != nil && reflect.DeepEqual(*d.Spec.Selector, metav1.LabelSelector{}) {
		return []Blocker{{Code: SelectingAll, Message: "selector is empty and would select every pod; the controller ignores this deployment"}}
	}
	rss := replicaSets
	if d.UID != "" {
		rss = rollout.OwnedReplicaSets(d, replicaSets)
	}
	newRS := rollout.FindNewReplicaSet(d, rss)
	_, olds := rollout.FindOldReplicaSets(d, rss)
	all := append(append([]*appsv1.ReplicaSet(nil), olds...), newRS)
	if newRS == nil {
		all = olds
	}
	if d.DeletionTimestamp != nil {
		// Checked before the rest, as the controller does: it syncs the
		// status only, whatever else the spec asks.
		if st, err := rollout.CalculateStatus(d, all, newRS, now); newRS != nil && err == nil && rollout.DeploymentComplete(d, st) {
			return nil
		}
		return []Blocker{{Code: BeingDeleted, Message: fmt.Sprintf("deployment is being deleted (since %s): the controller only updates its status",
			now.Sub(d.DeletionTimestamp.Time).Round(time.Second))}}
	}
	// A value that does not parse is ignored by upstream too (err then wraps
	// rollout.ErrIgnoredByUpstream and ok is false): the rollout goes on.
	if rev, ok, err := rollout.RollbackTo(d); ok && err == nil {
		return []Blocker{{Code: RollbackPending, Message: fmt.Sprintf("rollback to revision %d is pending", rev)}}
	}
	st, err := rollout.CalculateStatus(d, all, newRS, now)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		return []Blocker{{Code: InvalidSpec, Message: err.Error()}}
	}
	if newRS != nil && rollout.DeploymentComplete(d, st) {
		return nil
	}
	var out []Blocker
	if d.Spec.Paused {
		return append(replicaFailure(d, rss, newRS), Blocker{Code: Paused, Message: "deployment is paused"})
	}
	if d.Status.ObservedGeneration < d.Generation {
		out = append(out, Blocker{Code: GenerationNotObserved,
			Message: fmt.Sprintf("controller has not observed generation %d yet (observed %d)", d.Generation, d.Status.ObservedGeneration)})
	}
	out = append(out, replicaFailure(d, rss, newRS)...)
	var strategy []Blocker
	if rollout.IsRollingUpdate(d) {
		strategy = explainRolling(d, newRS, olds, all, pods, now)
	} else {
		strategy = explainRecreate(d, newRS, olds, pods, now)
	}
	out = append(out, strategy...)
	return append(out, deadline(d, now)...)
}

// replicaFailure reports the ReplicaFailure condition the controller
// would promote (rollout.ReplicaFailures), or the Deployment's own.
func replicaFailure(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []Blocker {
	for _, group := range [][]*appsv1.ReplicaSet{{newRS}, rss} {
		for _, rs := range group {
			if rs == nil {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
					return []Blocker{{Code: ReplicaFailure, ReplicaSet: rs.Name, Reason: c.Reason,
						Message: fmt.Sprintf("ReplicaFailure on %s: %s: %s", rs.Name, c.Reason, c.Message)}}
				}
			}
		}
	}
	if c := rollout.GetCondition(d.Status, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
		return []Blocker{{Code: ReplicaFailure, Reason: c.Reason, Message: fmt.Sprintf("ReplicaFailure: %s: %s", c.Reason, c.Message)}}
	}
	return nil
}

func explainRolling(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, olds, all []*appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) []Blocker {
	D := replicas(d.Spec.Replicas)
	if newRS == nil {
		if c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing); c != nil && c.Reason == rollout.ReasonFailedRSCreate {
			return []Blocker{{Code: NewReplicaSetMissing, Reason: c.Reason, Message: c.Message}}
		}
		return []Blocker{{Code: ControllerPending, Message: "new replica set not created yet"}}
	}
	step, err := rollout.Rolling(d, newRS, olds)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		return []Blocker{{Code: InvalidSpec, Message: err.Error()}}
	}
	if len(step.Scales) > 0 {
		return []Blocker{pending(step.Scales)}
	}
	surge, minAvail := bounds(d)
	total := rollout.TotalReplicas(all)
	newSpec := replicas(newRS.Spec.Replicas)
	newUnavail := newSpec - newRS.Status.AvailableReplicas
	causes := ClassifyPods(newRS, pods, now)
	base := Blocker{ReplicaSet: newRS.Name, Replicas: D, Total: total, MaxSurge: surge,
		MaxUnavailable: D - minAvail, MinAvailable: minAvail}
	var out []Blocker
	if newSpec < D {
		if next, err := rollout.NewRSNewReplicas(d, all, newRS); err == nil && next == newSpec {
			b := base
			b.Code = SurgeLimit
			b.Message = fmt.Sprintf("new replica set %s cannot scale up: %d pods ≥ %d + %d surge", newRS.Name, total, D, surge)
			out = append(out, b)
		}
	}
	if active := rollout.FilterActive(olds); len(active) > 0 {
		b := base
		b.Code, b.ReplicaSet = MinAvailableLimit, ""
		b.Available = rollout.TotalAvailableReplicas(append(active, newRS))
		b.NewUnavailable, b.Pods = newUnavail, causes
		if b.Available <= minAvail {
			b.Message = fmt.Sprintf("old replica sets cannot scale down: %d available ≤ %d minimum", b.Available, minAvail)
		} else {
			b.Message = fmt.Sprintf("old replica sets cannot scale down: %d pods − %d minimum available − %d unavailable new pods ≤ 0",
				total, minAvail, newUnavail)
		}
		if newUnavail > 0 {
			b.Message += fmt.Sprintf(" because %d new pods are unavailable (%s)", newUnavail, causes)
		}
		out = append(out, b)
	} else if newRS.Status.AvailableReplicas < D {
		b := base
		b.Code, b.NewUnavailable, b.Pods = NewPodsUnavailable, newUnavail, causes
		b.Available = newRS.Status.AvailableReplicas
		b.Message = fmt.Sprintf("new replica set %s has %d of %d pods available (%s)", newRS.Name, b.Available, D, causes)
		out = append(out, b)
	}
	if len(out) == 0 {
		out = append(out, Blocker{Code: ControllerPending, Message: "waiting for replica set statuses to catch up"})
	}
	return out
}

func explainRecreate(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, olds []*appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) []Blocker {
	byRS := map[types.UID][]*corev1.Pod{}
	for _, rs := range append(append([]*appsv1.ReplicaSet(nil), olds...), newRS) {
		if rs != nil {
			byRS[rs.UID] = controlledBy(rs.UID, pods)
		}
	}
	step, err := rollout.Recreate(d, newRS, olds, byRS)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		return []Blocker{{Code: InvalidSpec, Message: err.Error()}}
	}
	D := replicas(d.Spec.Replicas)
	switch {
	case len(step.Scales) > 0:
		return []Blocker{pending(step.Scales)}
	case step.OldPodsRunning && running(olds, byRS) == 0:
		return []Blocker{{Code: ControllerPending, Message: "waiting for old replica set statuses to catch up"}}
	case step.OldPodsRunning:
		var running, terminating int32
		for _, rs := range olds {
			for _, p := range byRS[rs.UID] {
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					running++
					if p.DeletionTimestamp != nil {
						terminating++
					}
				}
			}
		}
		return []Blocker{{Code: OldPodsRunning, Replicas: D, Total: running, Pods: PodCauses{Terminating: terminating},
			Message: fmt.Sprintf("recreate waits for %d old pods to stop (%d terminating)", running, terminating)}}
	case step.CreateNewReplicaSet || newRS == nil:
		return []Blocker{{Code: ControllerPending, Message: "new replica set not created yet"}}
	}
	causes := ClassifyPods(newRS, pods, now)
	avail := newRS.Status.AvailableReplicas
	if avail >= D {
		return []Blocker{{Code: ControllerPending, Message: "waiting for replica set statuses to catch up"}}
	}
	return []Blocker{{Code: NewPodsUnavailable, ReplicaSet: newRS.Name, Replicas: D, Total: replicas(newRS.Spec.Replicas),
		Available: avail, NewUnavailable: replicas(newRS.Spec.Replicas) - avail, Pods: causes,
		Message: fmt.Sprintf("new replica set %s has %d of %d pods available (%s)", newRS.Name, avail, D, causes)}}
}

// running counts the old pods that are not Succeeded or Failed, and the
// replicas old ReplicaSets still report.
func running(olds []*appsv1.ReplicaSet, byRS map[types.UID][]*corev1.Pod) int32 {
	n := rollout.TotalActualReplicas(olds)
	for _, rs := range olds {
		for _, p := range byRS[rs.UID] {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				n++
			}
		}
	}
	return n
}

// pending describes the scales the controller would make next.
func pending(scales []rollout.Scale) Blocker {
	var s []string
	for _, sc := range scales {
		s = append(s, sc.String())
	}
	return Blocker{Code: ControllerPending, Message: "controller will " + strings.Join(s, ", ")}
}

// deadline reports the progress deadline of an unfinished rollout.
func deadline(d *appsv1.Deployment, now time.Time) []Blocker {
	if !rollout.HasProgressDeadline(d) || d.Spec.ProgressDeadlineSeconds == nil {
		return nil
	}
	c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == rollout.ReasonNewReplicaSetAvailable || c.LastUpdateTime.IsZero() {
		return nil
	}
	if c.Reason == rollout.ReasonProgressDeadlineExceeded {
		ago := now.Sub(c.LastUpdateTime.Time)
		return []Blocker{{Code: DeadlineExceeded, Reason: c.Reason, Remaining: -ago,
			Message: fmt.Sprintf("progress deadline exceeded %s ago", ago.Round(time.Second))}}
	}
	left := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	msg := fmt.Sprintf("progress deadline in %s", left.Round(time.Second))
	if left < 0 {
		msg = fmt.Sprintf("progress deadline passed %s ago (not yet marked)", (-left).Round(time.Second))
	}
	return []Blocker{{Code: DeadlinePending, Reason: c.Reason, Remaining: left, Message: msg}}
}
