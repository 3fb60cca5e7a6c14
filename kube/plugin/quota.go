package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// fetchQuotas reads the namespace's ResourceQuotas and LimitRanges. What
// cannot be read is a warning: the plan then ignores it.
func fetchQuotas(ctx context.Context, cs Getter, st *State) {
	ns := st.Deployment.Namespace
	if ql, err := cs.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{}); err != nil {
		st.Warnings = append(st.Warnings, describeErr(err, "list", "resourcequotas", ns, "").Error()+" (quotas not simulated)")
	} else {
		for i := range ql.Items {
			st.ResourceQuotas = append(st.ResourceQuotas, &ql.Items[i])
		}
	}
	if ll, err := cs.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{}); err != nil {
		st.Warnings = append(st.Warnings, describeErr(err, "list", "limitranges", ns, "").Error()+" (default requests and limits not simulated)")
	} else {
		for i := range ll.Items {
			st.LimitRanges = append(st.LimitRanges, &ll.Items[i])
		}
	}
}

// quotasOnPods are the quotas of st that limit a resource pods consume,
// as admission enforces them.
func quotasOnPods(st *State) []planner.Quota {
	var out []planner.Quota
	for _, q := range st.ResourceQuotas {
		if pq := planner.QuotaFrom(q); pq.LimitsPods() {
			out = append(out, pq)
		}
	}
	return out
}

// PlanQuota is a ResourceQuota a plan enforced on the pods it created.
type PlanQuota struct {
	Name string `json:"name"`
	// Hard are its limits on what pods consume; Used is what the pods
	// of the namespace were charged at the start (the Deployment's and
	// the others').
	Hard map[string]string `json:"hard"`
	Used map[string]string `json:"used"`
}

// quotaOptions sets the planner's admission from st: the namespace's
// LimitRanges and the quotas that limit pods, with the pods the
// simulation does not hold (other workloads', the Deployment's
// terminating and finished ones) as Outside, and how many pods each
// current ReplicaSet has (Existing: the others were refused, or are not
// created yet). It returns the quotas for the report.
func quotaOptions(st *State, current []*appsv1.ReplicaSet, now time.Time, o *planner.Options) []PlanQuota {
	held := map[string]bool{} // UIDs of the pods the simulation holds
	o.Existing = map[string]int32{}
	for _, rs := range current {
		o.Existing[rs.Name] = 0
	}
	byUID := map[string]*appsv1.ReplicaSet{}
	for _, rs := range current {
		byUID[string(rs.UID)] = rs
	}
	for _, p := range st.Pods {
		ref := controllerOf(p)
		if ref == nil || byUID[string(ref.UID)] == nil || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		o.Existing[byUID[string(ref.UID)].Name]++
		held[string(p.UID)] = true
	}
	for _, lr := range st.LimitRanges {
		o.LimitRanges = append(o.LimitRanges, *lr.DeepCopy())
	}
	o.Quotas = quotasOnPods(st)
	if len(o.Quotas) == 0 {
		return nil
	}
	pods := st.QuotaPods
	if pods == nil {
		pods = st.Pods // only the selector's: others' usage unknown (Fetch warned)
	}
	var charged []*corev1.Pod
	for _, p := range pods {
		if !held[string(p.UID)] {
			o.Outside = append(o.Outside, p)
		}
		charged = append(charged, p)
	}
	o.Now = now
	var out []PlanQuota
	for _, q := range o.Quotas {
		pq := PlanQuota{Name: q.Name, Hard: map[string]string{}, Used: map[string]string{}}
		used := corev1.ResourceList{}
		for _, p := range charged {
			if ok, err := q.Counts(p); err != nil || !ok {
				continue
			}
			for name, v := range planner.PodUsage(p, now) {
				cur := used[name]
				cur.Add(v)
				used[name] = cur
			}
		}
		for name, v := range q.Hard {
			if podResourceName(name) {
				pq.Hard[string(name)] = v.String()
				u := used[name]
				pq.Used[string(name)] = u.String()
			}
		}
		out = append(out, pq)
	}
	return out
}

// podResourceName reports whether a quota's resource is one pods
// consume: what LimitsPods looks at.
func podResourceName(name corev1.ResourceName) bool {
	return planner.Quota{Hard: corev1.ResourceList{name: {}}}.LimitsPods()
}

// quotaText renders a quota's pod limits with their use: "pods 4/4".
func quotaText(q PlanQuota) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(q.Hard)) {
		parts = append(parts, fmt.Sprintf("%s %s/%s", name, q.Used[name], q.Hard[name]))
	}
	return fmt.Sprintf("ResourceQuota %s (%s)", q.Name, strings.Join(parts, ", "))
}

// isPodQuota reports whether c is a ResourceQuota refusing a
// ReplicaSet's pods (not the new ReplicaSet itself).
func isPodQuota(c Cause) bool {
	return c.Code == QuotaExceeded && c.Severity == Blocking && len(c.Objects) > 0 && strings.HasPrefix(c.Objects[0], "replicaset/")
}

// quotaVerdict decides whether a ResourceQuota that refuses pods blocks
// the rollout or only slows it, with the rollout model: the planner runs
// the rest of the rollout from the live state with the quota enforced on
// every pod it creates ([PlanLive]). If it completes, a step the quota
// allows is always ahead (pods go as the old ReplicaSets scale down, and
// their room goes to new pods): the refusals become a warning, and
// slowed is true. If it does not, the rollout cannot finish within the
// quota: the causes stay blocking and say where the plan stops. Only
// when the quota refusals are the only blocking causes, and the quotas
// could be read; the plan is returned for the estimate.
func quotaVerdict(d *appsv1.Deployment, st *State, now time.Time, causes []Cause, warnings []string) (_ []Cause, _ *PlanReport, slowed bool, _ []string) {
	var idx []int
	for i, c := range causes {
		switch {
		case isPodQuota(c):
			idx = append(idx, i)
		case c.Severity == Blocking:
			return causes, nil, false, warnings // stuck whatever the quota does
		}
	}
	if len(idx) == 0 {
		return causes, nil, false, warnings
	}
	if len(quotasOnPods(st)) == 0 {
		return causes, nil, false, warnings // no quota read: nothing to decide with
	}
	p, err := PlanLive(st, WhatIf{}, now, PlanOptions{Seed: 1})
	if err != nil {
		return causes, nil, false, append(warnings, "the quota's effect was not simulated: "+err.Error())
	}
	out := slices.Clone(causes)
	var names []string
	for _, q := range p.Quotas {
		names = append(names, quotaText(q))
	}
	if p.Complete && p.Unobserved == 0 {
		how := "the pods that go free room for the refused ones"
		if hasOldPods(d, st) {
			how = "as the old ReplicaSets scale down, the pods that go free room for new ones"
		}
		for _, i := range idx {
			c := &out[i]
			c.Severity = Warning
			c.Message = strings.Replace(c.Message, "rejects the pods of", "refuses some pods of", 1) +
				", but it only slows the rollout: " + how +
				fmt.Sprintf(" (the planner, enforcing %s, completes the rollout in %s", strings.Join(names, " and "), p.Duration)
			if p.Refused > 0 {
				c.Message += fmt.Sprintf(", waiting for room %d %s", p.Refused, plural(p.Refused, "time", "times"))
			}
			c.Message += "; the ReplicaSet controller retries a refused creation after a backoff that doubles with each failed sync, " +
				"so it may take longer)"
			c.Fix = "nothing needs to be done; to roll out faster, raise the ResourceQuota (kubectl describe quota) or lower the pods' requests"
		}
		return out, &p, true, warnings
	}
	var stall []string
	for _, b := range p.Stall {
		if b.Code == planner.SurgeLimit || b.Code == planner.MinAvailableLimit || b.Code == planner.NewPodsUnavailable {
			stall = append(stall, b.Message)
		}
	}
	unavail, err := rollout.MaxUnavailable(d)
	if err != nil || !rollout.IsRollingUpdate(d) {
		unavail = -1
	}
	for _, i := range idx {
		c := &out[i]
		c.Message += fmt.Sprintf(", and the rollout cannot finish within it: the planner, enforcing %s, does not see it complete", strings.Join(names, " and "))
		if len(stall) > 0 {
			c.Message += " (" + strings.Join(stall, "; ") + ")"
		}
		c.Fix = "raise the ResourceQuota (kubectl describe quota) or lower the pods' requests"
		if unavail == 0 && hasOldPods(d, st) {
			c.Fix += ", or allow maxUnavailable ≥ 1: old pods then go first and free room for new ones"
		}
	}
	return out, &p, false, warnings
}

// hasOldPods reports whether an old ReplicaSet of d still has pods: a
// rollout in progress, which scaling down old pods first would help.
func hasOldPods(d *appsv1.Deployment, st *State) bool {
	owned := rollout.OwnedReplicaSets(d, st.ReplicaSets)
	_, olds := rollout.FindOldReplicaSets(d, owned)
	return rollout.TotalReplicas(olds) > 0
}
