package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// podsQuota is a ResourceQuota "pods" of hard pods, used as its
// controller computed it.
func podsQuota(hard, used int64) *corev1.ResourceQuota {
	h := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(hard, resource.DecimalSI)}
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: "shop"}, Spec: corev1.ResourceQuotaSpec{Hard: h},
		Status: corev1.ResourceQuotaStatus{Hard: h, Used: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(used, resource.DecimalSI)}}}
}

// quotaWorld is web (3 replicas, surge/unavail) rolling from nginx:1 to
// app:2: the 3 old pods ready, newReady new pods ready and the new
// ReplicaSet at newSpec; a quota refused its other pods.
func quotaWorld(surge, unavail int, newSpec int32, newReady int, quota *corev1.ResourceQuota) *State {
	w := newWorld(3, 3, newSpec, "app:2")
	s, u := intstr.FromInt(surge), intstr.FromInt(unavail)
	w.d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
	for i := range 3 {
		w.pod(w.old, i, readyFor(time.Hour))
	}
	for i := range newReady {
		w.pod(w.new, i, readyFor(time.Second))
	}
	w.new.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "web-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4`}}
	st := w.state()
	if quota != nil {
		st.ResourceQuotas = []*corev1.ResourceQuota{quota}
		st.QuotaPods = w.pods
	}
	return st
}

func TestWhyQuotaVerdict(t *testing.T) {
	other := func(st *State) *State {
		st.QuotaPods = append(st.QuotaPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", UID: "db"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}})
		return st
	}
	scaledUp := func() *State {
		w := newWorld(6, 0, 6, "app:2")
		for i := range 4 {
			w.pod(w.new, i, readyFor(time.Hour))
		}
		w.new.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "web-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4`}}
		st := w.state()
		st.ReplicaSets = []*appsv1.ReplicaSet{w.new}
		st.ResourceQuotas, st.QuotaPods = []*corev1.ResourceQuota{podsQuota(4, 4)}, w.pods
		return st
	}
	defaultStrategy := func() *State {
		w := newWorld(4, 4, 1, "app:2")
		for i := range 4 {
			w.pod(w.old, i, readyFor(time.Hour))
		}
		w.new.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "web-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4`}}
		st := w.state()
		st.ResourceQuotas, st.QuotaPods = []*corev1.ResourceQuota{podsQuota(4, 4)}, w.pods
		return st
	}
	type verdict struct {
		State    RolloutState
		Codes    []CauseCode
		Severity Severity
		SlowedBy []CauseCode
		Estimate bool
	}
	tests := []struct {
		name string
		st   *State
		want verdict
		text []string
	}{
		{"slowed: 4 pods, 3 replicas, 2/0: each old pod that goes frees room", quotaWorld(2, 0, 2, 1, podsQuota(4, 4)),
			verdict{Progressing, []CauseCode{QuotaExceeded}, Warning, []CauseCode{QuotaExceeded}, true},
			[]string{"deployment/web in shop: progressing, slowed by quota", "~ QuotaExceeded: a ResourceQuota refuses some pods of web-",
				"but it only slows the rollout", "the planner, enforcing ResourceQuota pods (pods 4/4), completes the rollout in",
				"Estimate: completes in about"}},
		{"slowed: 4 replicas at 25%/25% (1/1) in 4 pods: an old pod goes first", defaultStrategy(),
			verdict{Progressing, []CauseCode{QuotaExceeded}, Warning, []CauseCode{QuotaExceeded}, true},
			[]string{"progressing, slowed by quota"}},
		{"stuck: 3 pods, 3 replicas, 1/0: no room and no old pod may go", quotaWorld(1, 0, 1, 0, podsQuota(3, 3)),
			verdict{Stuck, []CauseCode{QuotaExceeded}, Blocking, nil, false},
			[]string{"deployment/web in shop: STUCK", "does not see it complete", "old replica sets cannot scale down",
				"or allow maxUnavailable ≥ 1: old pods then go first"}},
		{"stuck: another workload's pod holds the room", other(quotaWorld(1, 0, 1, 0, podsQuota(4, 4))),
			verdict{Stuck, []CauseCode{QuotaExceeded}, Blocking, nil, false},
			[]string{"ResourceQuota pods (pods 4/4)"}},
		{"stuck: scaled up into a full quota", scaledUp(),
			verdict{Stuck, []CauseCode{QuotaExceeded}, Blocking, nil, false},
			[]string{"does not see it complete", "raise the ResourceQuota"}},
		{"slowed: scaled up while another workload's pods are going", func() *State {
			st := scaledUp()
			st.ResourceQuotas = []*corev1.ResourceQuota{podsQuota(6, 6)}
			for _, name := range []string{"batch-1", "batch-2"} {
				st.QuotaPods = append(st.QuotaPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name),
					DeletionTimestamp: ptr(metav1.NewTime(now.Add(5 * time.Second))), DeletionGracePeriodSeconds: ptr(int64(30))},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "job", Image: "job:1"}}}})
			}
			return st
		}(), verdict{Progressing, []CauseCode{QuotaExceeded}, Warning, []CauseCode{QuotaExceeded}, true},
			[]string{"but it only slows the rollout: the pods that go free room for the refused ones (the planner, enforcing ResourceQuota pods (pods 6/6)"}},
		{"no quota read: no judgement, stuck as the condition says", quotaWorld(2, 0, 2, 1, nil),
			verdict{Stuck, []CauseCode{QuotaExceeded}, Blocking, nil, false}, []string{"a ResourceQuota rejects the pods of web-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, text := whyText(t, tt.st)
			got := verdict{State: r.State, Codes: codes(r.Causes), SlowedBy: r.SlowedBy, Estimate: r.Estimate != nil && r.Estimate.Complete}
			if len(r.Causes) > 0 {
				got.Severity = r.Causes[0].Severity
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s\n%s", diff, text)
			}
			for _, s := range tt.text {
				if !strings.Contains(text, s) {
					t.Errorf("output lacks %q:\n%s", s, text)
				}
			}
		})
	}
}

// TestPlanWithQuota: plan reads the namespace's ResourceQuotas and
// LimitRanges and enforces them on the pods it creates: the issue's
// case (4 pods, 3 replicas, 2/0) peaks at 4 pods, not 5, and takes three
// waves, not one; another workload's pod counts against the quota.
func TestPlanWithQuota(t *testing.T) {
	build := func(extra ...runtime.Object) *fake.Clientset {
		w := newWorld(3, 0, 3, "app:1")
		s, u := intstr.FromInt(2), intstr.FromInt(0)
		w.d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
		w.d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
		for i := range 3 {
			w.pod(w.new, i, readyFor(time.Hour))
		}
		cs := w.clientset()
		for _, o := range extra {
			if err := cs.Tracker().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return cs
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "shop"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", UID: "db"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}
	type got struct {
		Complete bool
		PeakPods int32
		Waits    bool
		Quotas   []PlanQuota
		QuotaPods,
		LimitRanges int
	}
	tests := []struct {
		name string
		cs   *fake.Clientset
		want got
	}{
		{"no quota: 6 pods at the peak, terminating ones included", build(), got{Complete: true, PeakPods: 6}},
		{"4 pods: slowed, 4 at the peak", build(podsQuota(4, 3), lr),
			got{Complete: true, PeakPods: 4, Waits: true, QuotaPods: 3, LimitRanges: 1,
				Quotas: []PlanQuota{{Name: "pods", Hard: map[string]string{"pods": "4"}, Used: map[string]string{"pods": "3"}}}}},
		{"4 pods, one another workload's: no room, no step", build(podsQuota(4, 4), db),
			got{PeakPods: 3, Waits: true, QuotaPods: 4,
				Quotas: []PlanQuota{{Name: "pods", Hard: map[string]string{"pods": "4"}, Used: map[string]string{"pods": "4"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Fetch(context.Background(), tt.cs, "shop", "web")
			if err != nil {
				t.Fatal(err)
			}
			p, err := PlanLive(st, WhatIf{Images: map[string]string{"": "app:2"}}, now, PlanOptions{Seed: 1, Horizon: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := Write(&b, Text, p); err != nil {
				t.Fatal(err)
			}
			g := got{Complete: p.Complete, PeakPods: p.PeakPods, Waits: p.Refused > 0, Quotas: p.Quotas, QuotaPods: len(st.QuotaPods), LimitRanges: len(st.LimitRanges)}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s\n%s", diff, b.String())
			}
			if p.Refused > 0 && !strings.Contains(b.String(), "ResourceQuota pods (pods ") {
				t.Errorf("the plan does not show the quota:\n%s", b.String())
			}
		})
	}
}
