package plugin

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// RolloutState is the verdict of [Why].
type RolloutState string

const (
	// Complete: every replica updated and available (exit 0).
	Complete RolloutState = "Complete"
	// Progressing: not done, nothing wrong found; it is moving (exit 0).
	Progressing RolloutState = "Progressing"
	// Stuck: a blocking cause keeps it from finishing (exit 1).
	Stuck RolloutState = "Stuck"
	// Deleting: the Deployment has a deletionTimestamp; the controller
	// will not roll it out (exit 1).
	Deleting RolloutState = "Deleting"
)

// WhyReport is the answer of `kubectl ctrlkit why`.
type WhyReport struct {
	Deployment string       `json:"deployment"`
	Namespace  string       `json:"namespace"`
	State      RolloutState `json:"state"`
	// Revision is the Deployment's revision; NewReplicaSet the ReplicaSet
	// of its template ("" if not created yet).
	Revision      int64  `json:"revision"`
	NewReplicaSet string `json:"newReplicaSet,omitempty"`
	// Replicas … Available are spec.replicas and the status counts.
	Replicas  int32 `json:"replicas"`
	Updated   int32 `json:"updated"`
	Ready     int32 `json:"ready"`
	Available int32 `json:"available"`
	// MinAvailable and MaxPods are the bounds the controller keeps:
	// replicas − maxUnavailable and replicas + maxSurge.
	MinAvailable int32 `json:"minAvailable"`
	MaxPods      int32 `json:"maxPods"`
	// Blockers are the controller's own inequalities (planner.Explain).
	Blockers []Blocker `json:"blockers,omitempty"`
	// Causes are what is wrong behind them.
	Causes []Cause `json:"causes,omitempty"`
	// Unblock lists what would let the rollout finish.
	Unblock []string `json:"unblock,omitempty"`
	// Estimate is the planner's prediction of when a progressing rollout
	// completes (nil otherwise).
	Estimate *Estimate `json:"estimate,omitempty"`
	// SlowedBy lists the causes that slow a progressing rollout without
	// blocking it (QuotaExceeded: a ResourceQuota refuses some pods, but
	// the planner, enforcing it, sees the rollout complete).
	SlowedBy []CauseCode `json:"slowedBy,omitempty"`
	// Warnings say what could not be read.
	Warnings []string `json:"warnings,omitempty"`
}

// Blocker is planner.Blocker with JSON names.
type Blocker struct {
	Code           planner.BlockerCode `json:"code"`
	Message        string              `json:"message"`
	ReplicaSet     string              `json:"replicaSet,omitempty"`
	Replicas       int32               `json:"replicas,omitempty"`
	Total          int32               `json:"total,omitempty"`
	MaxSurge       int32               `json:"maxSurge,omitempty"`
	MaxUnavailable int32               `json:"maxUnavailable,omitempty"`
	MinAvailable   int32               `json:"minAvailable,omitempty"`
	Available      int32               `json:"available,omitempty"`
	NewUnavailable int32               `json:"newUnavailable,omitempty"`
	Reason         string              `json:"reason,omitempty"`
}

// Estimate is when the planner expects a progressing rollout to complete:
// [PlanLive] of the rest of the rollout from the live state, with the pod
// model measured on the live pods and the pods in flight coming up when
// that model says.
type Estimate struct {
	// Complete is false when the planner does not see the rollout
	// complete within its horizon (then Remaining is zero).
	Complete bool `json:"complete"`
	// Remaining is the time from now to completion; At is now +
	// Remaining.
	Remaining Duration  `json:"remaining"`
	At        time.Time `json:"at"`
	// Model is the pod model's description (Model.Source).
	Model string `json:"model"`
}

// ExitCode is the exit status for the report: 0 complete or
// progressing, 1 stuck or being deleted.
func (r WhyReport) ExitCode() int {
	if r.State == Stuck || r.State == Deleting {
		return ExitStuck
	}
	return ExitOK
}

// Why explains st's rollout at now. It is pure: st is not modified.
func Why(st *State, now time.Time, th Thresholds) WhyReport {
	th = th.withDefaults()
	d := st.Deployment
	owned := rollout.OwnedReplicaSets(d, st.ReplicaSets)
	newRS := rollout.FindNewReplicaSet(d, owned)
	surge, _ := rollout.MaxSurge(d)
	minAvail, _ := rollout.MinAvailable(d)
	r := WhyReport{Deployment: d.Name, Namespace: d.Namespace, Replicas: replicas(d.Spec.Replicas),
		Updated: d.Status.UpdatedReplicas, Ready: d.Status.ReadyReplicas, Available: d.Status.AvailableReplicas,
		MinAvailable: minAvail, MaxPods: replicas(d.Spec.Replicas) + surge, Warnings: slices.Clone(st.Warnings)}
	r.Revision, _ = rollout.Revision(d)
	if !rollout.IsRollingUpdate(d) {
		r.MinAvailable, r.MaxPods = 0, replicas(d.Spec.Replicas)
	}
	if newRS != nil {
		r.NewReplicaSet = newRS.Name
	}
	for _, b := range planner.Explain(d, st.ReplicaSets, st.Pods, now) {
		r.Blockers = append(r.Blockers, Blocker{Code: b.Code, Message: b.Message, ReplicaSet: b.ReplicaSet,
			Replicas: b.Replicas, Total: b.Total, MaxSurge: b.MaxSurge, MaxUnavailable: b.MaxUnavailable,
			MinAvailable: b.MinAvailable, Available: b.Available, NewUnavailable: b.NewUnavailable, Reason: b.Reason})
	}
	complete := newRS != nil && rollout.DeploymentComplete(d, d.Status) && len(r.Blockers) == 0 &&
		d.Status.ObservedGeneration >= d.Generation

	r.Causes = append(r.Causes, deletion(d, st, owned, now)...)
	r.Causes = append(r.Causes, controllerLag(d, st, now, th.Unobserved)...)
	if !complete && d.Spec.Paused {
		r.Causes = append(r.Causes, Cause{Code: Paused, Severity: Blocking,
			Message: "the deployment is paused: the controller only scales, it does not roll out",
			Objects: []string{"deployment/" + d.Name}, Fix: "kubectl rollout resume deployment/" + d.Name})
	}
	if c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing); c != nil && !complete {
		switch c.Reason {
		case rollout.ReasonProgressDeadlineExceeded:
			r.Causes = append(r.Causes, Cause{Code: DeadlineExceeded, Severity: Blocking,
				Message: fmt.Sprintf("no progress for %ds: the progress deadline passed %s ago", deref(d.Spec.ProgressDeadlineSeconds),
					now.Sub(c.LastUpdateTime.Time).Round(time.Second)),
				Objects: []string{"deployment/" + d.Name}, Detail: c.Message,
				Fix: "fix the causes listed; the controller keeps rolling once they are gone (or roll back: kubectl rollout undo deployment/" + d.Name + ")"})
		case rollout.ReasonFailedRSCreate:
			r.Causes = append(r.Causes, replicaSetCreate(d, c.Message))
		}
	}
	r.Causes = append(r.Causes, replicaFailures(d, owned, newRS)...)
	pods := groupPods(podIssues(owned, st.Pods, st.Events, now, th))
	for i := range pods {
		if pods[i].Code == KubeletRejected && complete {
			// Failed pods left from earlier rejections; their
			// replacements run.
			pods[i].Severity = Warning
			pods[i].Message += " (left over: the rollout completed)"
			pods[i].Fix = "delete the Failed pods: kubectl delete pods --field-selector=status.phase=Failed"
		}
	}
	r.Causes = append(r.Causes, pods...)
	r.Causes = append(r.Causes, collisions(d, st.ReplicaSets, newRS)...)
	r.Causes = append(r.Causes, foreign(d, st)...)
	r.Causes = append(r.Causes, disruptionBudgets(d, st, now)...)
	r.Causes = append(r.Causes, specFight(d, st, now)...)
	r.Causes = append(r.Causes, autoscalers(st)...)
	var plan *PlanReport
	if d.DeletionTimestamp == nil && !complete {
		var slowed bool
		r.Causes, plan, slowed, r.Warnings = quotaVerdict(d, st, now, r.Causes, r.Warnings)
		if slowed {
			r.SlowedBy = append(r.SlowedBy, QuotaExceeded)
		}
	}

	switch {
	case d.DeletionTimestamp != nil:
		r.State = Deleting
	case complete && !hasBlocking(r.Causes):
		r.State = Complete
	case hasBlocking(r.Causes):
		r.State = Stuck
	default:
		r.State = Progressing
	}
	if r.State == Stuck || r.State == Deleting {
		r.Unblock = unblock(d, r.Causes)
	}
	if r.State == Progressing {
		r.Estimate, r.Warnings = estimate(st, now, plan, r.Warnings)
	}
	return r
}

// estimate plans the rest of a progressing rollout from the live state
// (or takes p, that plan made already).
func estimate(st *State, now time.Time, p *PlanReport, warnings []string) (*Estimate, []string) {
	if p == nil {
		plan, err := PlanLive(st, WhatIf{}, now, PlanOptions{Seed: 1})
		if err != nil {
			return nil, append(warnings, "no estimate of the completion: "+err.Error())
		}
		p = &plan
	}
	e := &Estimate{Complete: p.Complete, Model: p.Model.Source}
	if p.Complete {
		e.Remaining, e.At = p.Duration, now.Add(time.Duration(p.Duration))
	}
	return e, warnings
}

// replicaSetCreate explains a new ReplicaSet the API server refused
// (Progressing=False/ReplicaSetCreateError, message from the create).
func replicaSetCreate(d *appsv1.Deployment, msg string) Cause {
	c := Cause{Code: ReplicaSetCreate, Severity: Blocking, Message: "the new ReplicaSet cannot be created",
		Objects: []string{"deployment/" + d.Name}, Detail: msg,
		Fix: "fix what the message names (an admission policy or webhook on ReplicaSets, usually), or roll back: kubectl rollout undo deployment/" + d.Name}
	if strings.Contains(msg, "exceeded quota") {
		c.Code = QuotaExceeded
		c.Message = "a ResourceQuota rejects the new ReplicaSet"
		c.Fix = "raise the ResourceQuota (kubectl describe quota)"
		if strings.Contains(msg, "count/replicasets.apps") {
			c.Message = "a ResourceQuota on the number of ReplicaSets (count/replicasets.apps) rejects the new ReplicaSet"
			limit := int32(10)
			if d.Spec.RevisionHistoryLimit != nil {
				limit = *d.Spec.RevisionHistoryLimit
			}
			c.Fix = fmt.Sprintf("raise the quota's count/replicasets.apps (kubectl describe quota), or lower spec.revisionHistoryLimit (now %d): "+
				"every revision kept is a ReplicaSet that counts, and the controller deletes the old ones beyond the limit", limit)
		}
	}
	return c
}

func hasBlocking(cs []Cause) bool {
	return slices.ContainsFunc(cs, func(c Cause) bool { return c.Severity == Blocking })
}

func unblock(d *appsv1.Deployment, cs []Cause) []string {
	var out []string
	podTrouble := false
	for _, c := range cs {
		if c.Severity != Blocking || c.Fix == "" || slices.Contains(out, c.Fix) {
			continue
		}
		out = append(out, c.Fix)
		switch c.Code {
		case ImagePullBackOff, CrashLoopBackOff, ContainerConfigError, ReadinessFailing, KubeletRejected, AdmissionRejected:
			podTrouble = d.DeletionTimestamp == nil
		}
	}
	if podTrouble {
		if rollout.IsRollingUpdate(d) {
			out = append(out, "or roll back to the previous revision: kubectl rollout undo deployment/"+d.Name)
		} else {
			out = append(out, "or roll back (Recreate: the app is down until then): kubectl rollout undo deployment/"+d.Name)
		}
	}
	return out
}

// serviceAccountRE reads the ServiceAccount admission plugin's refusal.
var serviceAccountRE = regexp.MustCompile(`error looking up service account ([^/\s]+)/([^:\s]+):`)

// replicaFailures reads the ReplicaFailure conditions of the owned
// ReplicaSets, the new one first: pod creation rejected.
func replicaFailures(d *appsv1.Deployment, owned []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []Cause {
	order := slices.Clone(owned)
	if newRS != nil {
		order = append([]*appsv1.ReplicaSet{newRS}, slices.DeleteFunc(order, func(rs *appsv1.ReplicaSet) bool { return rs == newRS })...)
	}
	var out []Cause
	for _, rs := range order {
		for _, c := range rs.Status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure || c.Status != corev1.ConditionTrue {
				continue
			}
			cause := Cause{Severity: Blocking, Objects: []string{"replicaset/" + rs.Name}, Detail: join(c.Reason, c.Message)}
			missing := replicas(rs.Spec.Replicas) - rs.Status.Replicas
			n := max(missing, 0)
			switch {
			case strings.Contains(c.Message, "exceeded quota"):
				cause.Code = QuotaExceeded
				cause.Message = fmt.Sprintf("a ResourceQuota rejects the pods of %s (%d missing)", rs.Name, n)
				cause.Fix = "raise the ResourceQuota (kubectl describe quota), lower the pods' requests, or lower maxSurge so the rollout fits"
			case strings.Contains(c.Message, "failed calling webhook"):
				cause.Code = FailedCreate
				cause.Message = fmt.Sprintf("an admission webhook cannot be called, and its failurePolicy Fail rejects the pods of %s (%d missing)", rs.Name, n)
				cause.Fix = "bring the webhook named in the message back (its Service, endpoints and pods: kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations), " +
					"or, if it is not needed, delete its configuration or set failurePolicy: Ignore; the ReplicaSet controller retries on its own " +
					"(rolling back does not help: every pod goes through the webhook)"
			case strings.Contains(c.Message, "error looking up service account"):
				ns, sa := rs.Namespace, cmpOr(rs.Spec.Template.Spec.ServiceAccountName, "default")
				if m := serviceAccountRE.FindStringSubmatch(c.Message); m != nil {
					ns, sa = m[1], m[2]
				}
				cause.Code = AdmissionRejected
				cause.Message = fmt.Sprintf("the pods of %s name ServiceAccount %s, which does not exist (%d missing)", rs.Name, sa, n)
				cause.Fix = fmt.Sprintf("create the ServiceAccount (kubectl create serviceaccount %s -n %s) or fix serviceAccountName in the pod template", sa, ns)
			case strings.Contains(c.Message, "forbidden"), strings.Contains(c.Message, "denied the request"):
				cause.Code = AdmissionRejected
				cause.Message = fmt.Sprintf("admission rejects the pods of %s (%d missing)", rs.Name, n)
				cause.Fix = "make the pod template satisfy the policy named in the message (LimitRange, Pod Security, an admission policy or webhook)"
			default:
				cause.Code = FailedCreate
				cause.Message = fmt.Sprintf("the pods of %s cannot be created (%d missing)", rs.Name, n)
				cause.Fix = "fix what the message names; the ReplicaSet controller retries the creations on its own"
				if d.DeletionTimestamp == nil {
					cause.Fix += " (or roll back: kubectl rollout undo deployment/" + d.Name + ")"
				}
			}
			out = append(out, cause)
		}
	}
	return out
}

// collisions reports a ReplicaSet holding a name the controller computed
// for d's template that is not d's ReplicaSet for it.
func collisions(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []Cause {
	names := collisionNames(d)
	var out []Cause
	for i, name := range names {
		for _, rs := range rss {
			if rs.Name != name || (newRS != nil && rs.UID == newRS.UID) {
				continue
			}
			sev, msg := Warning, fmt.Sprintf("ReplicaSet %s holds the name computed for the template (collisionCount %d) with another template or owner", name, i)
			fix := "none needed: the controller bumped status.collisionCount and used another name"
			if newRS == nil && i == len(names)-1 {
				sev = Blocking
				msg += "; the new ReplicaSet cannot be created until the controller bumps status.collisionCount"
				fix = "delete or rename ReplicaSet " + name + " if the controller does not move on"
			} else if newRS != nil {
				msg += "; the controller moved on to " + newRS.Name
			}
			out = append(out, Cause{Code: HashCollision, Severity: sev, Message: msg,
				Objects: []string{"replicaset/" + name}, Detail: ownerText(rs), Fix: fix})
		}
	}
	return out
}

func ownerText(obj metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return fmt.Sprintf("controlled by %s/%s", strings.ToLower(ref.Kind), ref.Name)
	}
	return "controlled by nothing"
}

// foreign reports ReplicaSets that match d's selector but are not d's,
// and other Deployments whose selectors overlap d's.
func foreign(d *appsv1.Deployment, st *State) []Cause {
	var out []Cause
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil
	}
	names := collisionNames(d)
	for _, rs := range st.ReplicaSets {
		if metav1.IsControlledBy(rs, d) || slices.Contains(names, rs.Name) || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		n := fmt.Sprintf("%d pods", rs.Status.Replicas)
		if ref := metav1.GetControllerOfNoCopy(rs); ref == nil {
			out = append(out, Cause{Code: OrphanedReplicaSet, Severity: Warning,
				Message: fmt.Sprintf("ReplicaSet %s matches the selector but no controller owns it (%s); the deployment controller should adopt it", rs.Name, n),
				Objects: []string{"replicaset/" + rs.Name}, Detail: "controlled by nothing",
				Fix: "if it stays orphaned (being deleted?), delete it or change its labels; its pods count against quotas and PodDisruptionBudgets"})
		} else {
			out = append(out, Cause{Code: SelectorOverlap, Severity: Warning,
				Message: fmt.Sprintf("ReplicaSet %s (%s) has pods matching this deployment's selector (%s)", rs.Name, ownerText(rs), n),
				Objects: []string{"replicaset/" + rs.Name}, Detail: ownerText(rs),
				Fix: "give each controller a selector of its own; overlapping selectors confuse kubectl, Services and PodDisruptionBudgets"})
		}
	}
	for _, o := range st.Deployments {
		osel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil || osel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(o.Spec.Template.Labels)) || osel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, Cause{Code: SelectorOverlap, Severity: Warning,
				Message: fmt.Sprintf("deployment %s has an overlapping selector (%s vs %s)", o.Name, osel, sel),
				Objects: []string{"deployment/" + o.Name},
				Fix:     "give each Deployment a selector of its own; overlapping selectors confuse kubectl, Services and PodDisruptionBudgets"})
		}
	}
	return out
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
