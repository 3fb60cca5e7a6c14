package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// WhatIf is the change `kubectl ctrlkit plan` simulates. The zero value
// plans the current template (the rest of a rollout in progress).
type WhatIf struct {
	// Images sets container images: container name → image; the name ""
	// means the only container.
	Images map[string]string
	// Spec, if set, replaces the Deployment's spec (a changed manifest).
	Spec *appsv1.DeploymentSpec
}

// PlanOptions configures [PlanLive].
type PlanOptions struct {
	// Seed makes the pod model's draws reproducible.
	Seed uint64
	// Horizon bounds the simulated time (zero: planner's one hour).
	Horizon time.Duration
	// Model, if set, replaces the model measured on the live pods.
	Model *Model
	// Shutdown is how long a deleted pod takes to stop (zero: its grace
	// period).
	Shutdown time.Duration
	// Unobserved is how long the Deployment's latest generation may wait
	// for a controller before the plan says that none acts on it (zero:
	// DefaultUnobserved).
	Unobserved time.Duration
}

// PlanReport is the answer of `kubectl ctrlkit plan`.
type PlanReport struct {
	Deployment string `json:"deployment"`
	Namespace  string `json:"namespace"`
	// Change describes the what-if.
	Change string `json:"change"`
	Model  Model  `json:"model"`
	// Complete, Duration, PeakPods, PeakSpec and MinAvailable are the
	// planner's predictions; MaxPods and MinAvailableBound the
	// controller's limits (replicas + maxSurge, replicas −
	// maxUnavailable).
	Complete          bool       `json:"complete"`
	Duration          Duration   `json:"duration"`
	PeakPods          int32      `json:"peakPods"`
	PeakSpec          int32      `json:"peakSpec"`
	MinAvailable      int32      `json:"minAvailable"`
	MaxPods           int32      `json:"maxPods"`
	MinAvailableBound int32      `json:"minAvailableBound"`
	Steps             []PlanStep `json:"steps"`
	// Stall holds the planner's blockers when the rollout does not finish.
	Stall []Blocker `json:"stall,omitempty"`
	// Violations are broken rollout invariants (planner.Check).
	Violations []string `json:"violations,omitempty"`
	// Table is the planner's timeline table (text output only).
	Table string `json:"-"`
	// Quotas are the namespace's ResourceQuotas on pods, which the plan
	// enforced on every pod it created (with the LimitRanges' defaults);
	// Refused counts the creations they refused: each waits, as the
	// ReplicaSet controller's retries do, until pods going free room.
	Quotas  []PlanQuota `json:"quotas,omitempty"`
	Refused int         `json:"refused,omitempty"`
	// Unobserved is set when no controller has acted on the Deployment's
	// latest generation for that long (at least PlanOptions.Unobserved):
	// the simulation assumes controllers that run, so Complete is false
	// and Duration is how long the rollout takes once one does.
	Unobserved Duration `json:"unobserved,omitempty"`
	// Warnings say why the prediction may not hold.
	Warnings []string `json:"warnings,omitempty"`
}

// PlanStep is one step of the predicted timeline.
type PlanStep struct {
	At          Duration         `json:"at"`
	ReplicaSets []PlanReplicaSet `json:"replicaSets"`
	Pods        int32            `json:"pods"`
	Available   int32            `json:"available"`
	Events      []string         `json:"events,omitempty"`
}

// PlanReplicaSet is one ReplicaSet in a [PlanStep].
type PlanReplicaSet struct {
	Name      string `json:"name"`
	New       bool   `json:"new,omitempty"`
	Spec      int32  `json:"spec"`
	Ready     int32  `json:"ready"`
	Available int32  `json:"available"`
}

// ExitCode is 0 when the plan completes, 1 when it stalls.
func (r PlanReport) ExitCode() int {
	if r.Complete {
		return ExitOK
	}
	return ExitStuck
}

// PlanLive simulates the rollout w would start from the live state st: the
// Deployment's ReplicaSets as they are, the pods behaving as measured on
// the live pods ([ObservedModel]), the real controllers in virtual time
// (planner.Simulate). With no change it plans the current template: the rest
// of a rollout in progress, with the failure rate its new pods show. It
// is deterministic for a given st, w and opts.Seed.
func PlanLive(st *State, w WhatIf, now time.Time, opts PlanOptions) (PlanReport, error) {
	live := st.Deployment
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: live.Name, Namespace: live.Namespace,
		Labels: live.Labels, Annotations: live.Annotations}, Spec: *live.Spec.DeepCopy()}
	change := "none: the rest of the current rollout"
	if w.Spec != nil {
		d.Spec = *w.Spec.DeepCopy()
		change = "the manifest's spec"
	}
	if len(w.Images) > 0 {
		desc, err := setImages(&d.Spec.Template, w.Images)
		if err != nil {
			return PlanReport{}, err
		}
		change = desc
	}
	owned := rollout.OwnedReplicaSets(live, st.ReplicaSets)
	model := ObservedModel(owned, st.Pods)
	if cur := rollout.FindNewReplicaSet(d, owned); cur != nil {
		model = model.withFailures(cur, st.Pods, st.Events, now)
	} else {
		model.Source += "; the new version's pods are assumed to behave like these"
	}
	model.Shutdown = Duration(opts.Shutdown)
	if opts.Model != nil {
		model = *opts.Model
	}
	current := make([]*appsv1.ReplicaSet, 0, len(owned))
	for _, rs := range owned {
		if rs.DeletionTimestamp == nil {
			current = append(current, rs)
		}
	}
	popts := planner.Options{Seed: opts.Seed, Horizon: opts.Horizon, InFlight: inFlight(current, st.Pods, model, now)}
	quotas := quotaOptions(st, current, now, &popts)
	tl, err := planner.Simulate(d, current, model.PodModel(), popts)
	if err != nil {
		return PlanReport{}, err
	}
	surge, _ := rollout.MaxSurge(d)
	minAvail, _ := rollout.MinAvailable(d)
	r := PlanReport{Deployment: live.Name, Namespace: live.Namespace, Change: change, Model: model,
		Complete: tl.Complete, Duration: Duration(tl.Duration), PeakPods: tl.PeakPods, PeakSpec: tl.PeakSpec,
		MinAvailable: tl.MinAvailable, MaxPods: replicas(d.Spec.Replicas) + surge, MinAvailableBound: minAvail,
		Table: tl.String(), Quotas: quotas, Refused: tl.Refused}
	if !rollout.IsRollingUpdate(d) {
		r.MaxPods, r.MinAvailableBound = replicas(d.Spec.Replicas), 0
	}
	for _, s := range tl.Steps {
		_, pods, avail, term := s.Totals()
		ps := PlanStep{At: Duration(s.Time.Sub(tl.Start)), Pods: pods + term, Available: avail, Events: s.Events}
		for _, rs := range s.ReplicaSets {
			ps.ReplicaSets = append(ps.ReplicaSets, PlanReplicaSet{Name: rs.Name, New: rs.New, Spec: rs.Spec, Ready: rs.Ready, Available: rs.Available})
		}
		r.Steps = append(r.Steps, ps)
	}
	if tl.Stall != nil {
		for _, b := range tl.Stall.Blockers {
			r.Stall = append(r.Stall, Blocker{Code: b.Code, Message: b.Message, ReplicaSet: b.ReplicaSet, Reason: b.Reason})
		}
	}
	for _, v := range planner.Check(tl.Trace(), d) {
		r.Violations = append(r.Violations, v.String())
	}
	th := opts.Unobserved
	if th <= 0 {
		th = DefaultUnobserved
	}
	if waited, _, ok := notObserved(live, now, th); ok && live.DeletionTimestamp == nil {
		r.Unobserved, r.Complete = Duration(waited.Round(time.Second)), false
		r.Warnings = append(r.Warnings, fmt.Sprintf("no Deployment controller has acted on generation %d for %s (status.observedGeneration %d): "+
			"this plan assumes controllers that run; see kubectl ctrlkit why deploy/%s", live.Generation, r.Unobserved, live.Status.ObservedGeneration, live.Name))
	}
	if live.DeletionTimestamp != nil {
		r.Complete = false
		r.Warnings = append(r.Warnings, fmt.Sprintf("the deployment is being deleted: the controller will not roll it out (the plan shows what it would do otherwise); see kubectl ctrlkit why deploy/%s", live.Name))
	}
	return r, nil
}

// inFlight is, for each ReplicaSet of current, how long after now each
// of its pods that is not available yet should become available, by the
// model: a Ready pod once it has been Ready minReadySeconds; a running
// one after the model's readiness delay (its mean) since it started; a
// pending one after the start delay and the readiness delay since it
// was created. Terminating and finished pods are not counted.
func inFlight(current []*appsv1.ReplicaSet, pods []*corev1.Pod, m Model, now time.Time) map[string][]time.Duration {
	byUID := map[string]*appsv1.ReplicaSet{}
	for _, rs := range current {
		byUID[string(rs.UID)] = rs
	}
	ready := time.Duration(m.ReadyAfter) + time.Duration(m.ReadyJitter)/2
	out := map[string][]time.Duration{}
	for _, p := range pods {
		ref := controllerOf(p)
		if ref == nil || byUID[string(ref.UID)] == nil || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		rs := byUID[string(ref.UID)]
		minReady := time.Duration(rs.Spec.MinReadySeconds) * time.Second
		if replicaset.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
			continue
		}
		var due time.Time
		switch {
		case replicaset.IsPodReady(p) && !readyTime(p).IsZero():
			due = readyTime(p).Add(minReady)
		case p.Status.StartTime != nil:
			due = p.Status.StartTime.Add(ready + minReady)
		default:
			due = p.CreationTimestamp.Add(time.Duration(m.StartDelay) + ready + minReady)
		}
		out[rs.Name] = append(out[rs.Name], max(due.Sub(now), 0))
	}
	for name := range out {
		slices.Sort(out[name])
	}
	return out
}

// setImages applies name=image settings to t, as `kubectl set image`
// does, and describes the change.
func setImages(t *corev1.PodTemplateSpec, images map[string]string) (string, error) {
	var desc []string
	for name, img := range images {
		if name == "" {
			if len(t.Spec.Containers) != 1 {
				return "", errors.New("--image IMAGE needs a template with one container; use --image CONTAINER=IMAGE")
			}
			name = t.Spec.Containers[0].Name
		}
		found := false
		for _, list := range [][]corev1.Container{t.Spec.Containers, t.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == name {
					desc = append(desc, fmt.Sprintf("image of %s: %s → %s", name, list[i].Image, img))
					list[i].Image = img
					found = true
				}
			}
		}
		if !found {
			return "", fmt.Errorf("--image: the pod template has no container %q", name)
		}
	}
	slices.Sort(desc)
	return strings.Join(desc, ", "), nil
}
