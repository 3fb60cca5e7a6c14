package replicaset_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func ptr32(v int32) *int32 { return &v }

func failureCond(reason, msg string, at time.Time) appsv1.ReplicaSetCondition {
	return appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at),
	}
}

func TestCalculateStatus(t *testing.T) {
	rs := newRS("web", 3)
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "fe"}
	rs.Spec.MinReadySeconds = 10
	full := withLabels(map[string]string{"app": "web", "tier": "fe", "extra": "x"})
	partial := withLabels(map[string]string{"app": "web"})
	other := appsv1.ReplicaSetCondition{Type: "Other", Status: corev1.ConditionTrue}
	old := failureCond(replicaset.ReasonFailedDelete, "old", t0.Add(-time.Hour))
	boom := errors.New("boom")

	cases := []struct {
		name        string
		conds       []appsv1.ReplicaSetCondition
		active      []*corev1.Pod
		terminating []*corev1.Pod
		err         error
		want        appsv1.ReplicaSetStatus
	}{{
		name:        "counts",
		active:      []*corev1.Pod{newPod("a", full, readySince(t0.Add(-10*time.Second))), newPod("b", partial, readySince(t0.Add(-9*time.Second))), newPod("c", full)},
		terminating: []*corev1.Pod{newPod("d")},
		// a became ready exactly minReadySeconds ago: available (inclusive).
		want: appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, TerminatingReplicas: ptr32(1), ObservedGeneration: 1},
	}, {
		name:   "ready without transition time is not available with minReadySeconds",
		active: []*corev1.Pod{newPod("a", full, readySince(time.Time{}))},
		want:   appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, TerminatingReplicas: ptr32(0), ObservedGeneration: 1},
	}, {
		name:   "create failure adds FailedCreate",
		conds:  []appsv1.ReplicaSetCondition{other},
		active: []*corev1.Pod{newPod("a", full)},
		err:    boom,
		want: appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, TerminatingReplicas: ptr32(0), ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{other, failureCond(replicaset.ReasonFailedCreate, "boom", t0)}},
	}, {
		name:   "delete failure adds FailedDelete",
		active: []*corev1.Pod{newPod("a", full), newPod("b", full), newPod("c", full), newPod("d", full)},
		err:    boom,
		want: appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 4, TerminatingReplicas: ptr32(0), ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{failureCond(replicaset.ReasonFailedDelete, "boom", t0)}},
	}, {
		name:   "failure at the right size has an empty reason",
		active: []*corev1.Pod{newPod("a", full), newPod("b", full), newPod("c", full)},
		err:    boom,
		want: appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, TerminatingReplicas: ptr32(0), ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{failureCond("", "boom", t0)}},
	}, {
		name:  "existing failure is kept on a new error",
		conds: []appsv1.ReplicaSetCondition{old},
		err:   boom,
		want: appsv1.ReplicaSetStatus{TerminatingReplicas: ptr32(0), ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{old}},
	}, {
		name:  "success removes the failure; nothing left is nil",
		conds: []appsv1.ReplicaSetCondition{old},
		want:  appsv1.ReplicaSetStatus{TerminatingReplicas: ptr32(0), ObservedGeneration: 1},
	}, {
		name:  "success keeps other conditions",
		conds: []appsv1.ReplicaSetCondition{other, old},
		want: appsv1.ReplicaSetStatus{TerminatingReplicas: ptr32(0), ObservedGeneration: 1,
			Conditions: []appsv1.ReplicaSetCondition{other}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := rs.DeepCopy()
			rs.Status.Conditions = tc.conds
			before := rs.DeepCopy()
			got, err := replicaset.CalculateStatus(rs, tc.active, tc.terminating, tc.err, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CalculateStatus mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, rs); diff != "" {
				t.Errorf("CalculateStatus modified rs (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNeedsStatusUpdate(t *testing.T) {
	rs := newRS("web", 1)
	rs.Status.Replicas = 1
	same := rs.Status
	cases := []struct {
		name string
		mod  func(rs *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus)
		want bool
	}{
		{name: "identical", mod: func(*appsv1.ReplicaSet, *appsv1.ReplicaSetStatus) {}},
		{name: "replicas", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.Replicas = 2 }, want: true},
		{name: "fully labeled", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.FullyLabeledReplicas = 1 }, want: true},
		{name: "ready", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.ReadyReplicas = 1 }, want: true},
		{name: "available", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.AvailableReplicas = 1 }, want: true},
		{name: "terminating nil vs 0", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.TerminatingReplicas = nil }, want: true},
		{name: "terminating same value, other pointer", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.TerminatingReplicas = ptr32(0) }},
		{name: "generation ahead", mod: func(rs *appsv1.ReplicaSet, _ *appsv1.ReplicaSetStatus) { rs.Generation = 2 }, want: true},
		{name: "observed generation of new status ignored", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) { st.ObservedGeneration = 7 }},
		{name: "conditions nil vs empty", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) {
			st.Conditions = []appsv1.ReplicaSetCondition{}
		}, want: true},
		{name: "condition added", mod: func(_ *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) {
			st.Conditions = []appsv1.ReplicaSetCondition{failureCond("", "x", t0)}
		}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, st := rs.DeepCopy(), *same.DeepCopy()
			tc.mod(rs, &st)
			if got := replicaset.NeedsStatusUpdate(rs, &st); got != tc.want {
				t.Errorf("NeedsStatusUpdate = %v; want %v", got, tc.want)
			}
			w, ok := replicaset.StatusToWrite(rs, st)
			if ok != tc.want || (ok && w.ObservedGeneration != rs.Generation) {
				t.Errorf("StatusToWrite = gen %d, %v; want gen %d, %v", w.ObservedGeneration, ok, rs.Generation, tc.want)
			}
		})
	}
}

func TestNextAvailabilityCheck(t *testing.T) {
	pods := []*corev1.Pod{
		newPod("available", readySince(t0.Add(-time.Minute))),
		newPod("in-4s", readySince(t0.Add(-6*time.Second))),
		newPod("in-8s", readySince(t0.Add(-2*time.Second))),
		newPod("unready"),
		newPod("no-time", readySince(time.Time{})),
	}
	cases := []struct {
		name           string
		pods           []*corev1.Pod
		minReady       int32
		evaluated, now time.Time
		want           time.Duration
		wantOK         bool
	}{
		{name: "earliest pod", pods: pods, minReady: 10, evaluated: t0, now: t0, want: 4 * time.Second, wantOK: true},
		{name: "measured from now", pods: pods, minReady: 10, evaluated: t0, now: t0.Add(time.Second), want: 3 * time.Second, wantOK: true},
		{name: "due by now", pods: pods, minReady: 10, evaluated: t0, now: t0.Add(5 * time.Second), want: 0, wantOK: true},
		{name: "nothing waiting", pods: pods[:1], minReady: 10, evaluated: t0, now: t0},
		{name: "minReadySeconds 0", pods: pods, evaluated: t0, now: t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := replicaset.NextAvailabilityCheck(tc.pods, tc.minReady, tc.evaluated, tc.now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("NextAvailabilityCheck = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestAvailabilityRequeue(t *testing.T) {
	rs := newRS("web", 2, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 10 })
	waiting := []*corev1.Pod{newPod("a", readySince(t0.Add(-6*time.Second)))}
	cases := []struct {
		name   string
		rs     *appsv1.ReplicaSet
		status appsv1.ReplicaSetStatus
		now    time.Time
		want   time.Duration
	}{
		{name: "all available", rs: rs, status: appsv1.ReplicaSetStatus{ReadyReplicas: 1, AvailableReplicas: 1}, now: t0},
		{name: "no minReadySeconds", rs: newRS("web", 2), status: appsv1.ReplicaSetStatus{ReadyReplicas: 1}, now: t0},
		{name: "next pod", rs: rs, status: appsv1.ReplicaSetStatus{ReadyReplicas: 1}, now: t0, want: 4 * time.Second},
		{name: "overdue is immediate but positive", rs: rs, status: appsv1.ReplicaSetStatus{ReadyReplicas: 1}, now: t0.Add(time.Minute), want: time.Nanosecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := replicaset.AvailabilityRequeue(tc.rs, &tc.status, waiting, t0, tc.now); got != tc.want {
				t.Errorf("AvailabilityRequeue = %v; want %v", got, tc.want)
			}
		})
	}
	// The fallback when status disagrees with the pods: minReadySeconds.
	if got := replicaset.AvailabilityRequeue(rs, &appsv1.ReplicaSetStatus{ReadyReplicas: 1}, nil, t0, t0); got != 10*time.Second {
		t.Errorf("AvailabilityRequeue fallback = %v; want 10s", got)
	}
}
