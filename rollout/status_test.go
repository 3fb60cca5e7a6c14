package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, updated, transitioned time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(updated), LastTransitionTime: metav1.NewTime(transitioned)}
}

func TestSetAndRemoveCondition(t *testing.T) {
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	avail := cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "A", "m", t0, t0)
	prog := cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "P", "m", t0, t0)
	st := appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{prog, avail}}
	before := *st.DeepCopy()
	tests := []struct {
		name string
		c    appsv1.DeploymentCondition
		want []appsv1.DeploymentCondition
	}{
		{"same status and reason: untouched", cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "P", "new msg", t1, t1),
			[]appsv1.DeploymentCondition{prog, avail}},
		{"new reason, same status: keeps transition time, moves to end", cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "Q", "x", t1, t1),
			[]appsv1.DeploymentCondition{avail, cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "Q", "x", t1, t0)}},
		{"new status: new transition time", cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "P", "x", t2, t2),
			[]appsv1.DeploymentCondition{avail, cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "P", "x", t2, t2)}},
		{"new type appended", cond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "F", "x", t1, t1),
			[]appsv1.DeploymentCondition{prog, avail, cond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "F", "x", t1, t1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SetCondition(st, tc.c)
			if diff := cmp.Diff(tc.want, got.Conditions); diff != "" {
				t.Errorf("SetCondition mismatch (-want +got):\n%s", diff)
			}
			unchanged(t, "status", before, st)
		})
	}
	if got := RemoveCondition(st, appsv1.DeploymentProgressing); !cmp.Equal([]appsv1.DeploymentCondition{avail}, got.Conditions) {
		t.Errorf("RemoveCondition = %v", got.Conditions)
	}
	if got := RemoveCondition(appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{avail}}, appsv1.DeploymentAvailable); got.Conditions != nil {
		t.Errorf("removing the last condition gives %#v; want nil, as upstream", got.Conditions)
	}
	if c := GetCondition(st, appsv1.DeploymentReplicaFailure); c != nil {
		t.Errorf("GetCondition(missing) = %v", c)
	}
	if c := GetCondition(st, appsv1.DeploymentAvailable); c == nil || c.Reason != "A" {
		t.Errorf("GetCondition(Available) = %v", c)
	}
	rsc := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota", LastTransitionTime: metav1.NewTime(t1)}
	if diff := cmp.Diff(cond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", "quota", t1, t1), ReplicaSetToDeploymentCondition(rsc)); diff != "" {
		t.Errorf("ReplicaSetToDeploymentCondition mismatch (-want +got):\n%s", diff)
	}
}

func TestCalculateStatus(t *testing.T) {
	d := deploy(10, "3", "2")
	d.Generation = 4
	d.Status.CollisionCount = ptr[int32](2)
	newRS := rs("new", 5, 5, tpl("v2"), actual(4), ready(3), avail(2))
	old := rs("old", 0, 6, actual(7), ready(6), avail(6))
	before := d.DeepCopy()
	got, err := CalculateStatus(d, []*appsv1.ReplicaSet{old, newRS, nil}, newRS, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := appsv1.DeploymentStatus{
		ObservedGeneration: 4, Replicas: 11, UpdatedReplicas: 4, ReadyReplicas: 9, AvailableReplicas: 8,
		UnavailableReplicas: 3, // Σspec 11 − 8, not D − 8
		TerminatingReplicas: nil,
		CollisionCount:      ptr[int32](2),
		Conditions: []appsv1.DeploymentCondition{cond(appsv1.DeploymentAvailable, corev1.ConditionTrue,
			ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", t0, t0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CalculateStatus mismatch (-want +got):\n%s", diff)
	}
	unchanged(t, "deployment", before, d)
	*got.CollisionCount = 9
	if *d.Status.CollisionCount != 2 {
		t.Error("status shares collisionCount with the input")
	}

	// Below minAvailable: Available flips to False; over-availability clamps unavailable to 0.
	low := rs("old", 0, 3, avail(7))
	got, _ = CalculateStatus(d, []*appsv1.ReplicaSet{low}, nil, t0)
	if got.UnavailableReplicas != 0 || got.UpdatedReplicas != 0 {
		t.Errorf("unavailable %d, updated %d; want 0, 0", got.UnavailableReplicas, got.UpdatedReplicas)
	}
	if c := GetCondition(got, appsv1.DeploymentAvailable); c.Status != corev1.ConditionFalse || c.Reason != ReasonMinimumReplicasUnavailable {
		t.Errorf("Available = %v", c)
	}
	withT := rs("old", 0, 3, func(r *appsv1.ReplicaSet) { r.Status.TerminatingReplicas = ptr[int32](2) })
	if got, _ := CalculateStatus(d, []*appsv1.ReplicaSet{withT}, nil, t0); got.TerminatingReplicas == nil || *got.TerminatingReplicas != 2 {
		t.Errorf("TerminatingReplicas = %v; want 2", got.TerminatingReplicas)
	}
	rec := recreateDeploy(3)
	if got, _ := CalculateStatus(rec, []*appsv1.ReplicaSet{rs("n", 0, 3, avail(2))}, nil, t0); GetCondition(got, appsv1.DeploymentAvailable).Status != corev1.ConditionFalse {
		t.Error("Recreate needs every replica available")
	}
}

func TestReplicaFailures(t *testing.T) {
	fail := func(msg string) rsOpt {
		return func(r *appsv1.ReplicaSet) {
			r.Status.Conditions = append(r.Status.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: msg})
		}
	}
	a, b := rs("a", 0, 1, fail("a")), rs("b", 1, 1, fail("b"))
	n := rs("n", 2, 1, fail("n"))
	msgs := func(cs []appsv1.DeploymentCondition) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Message)
		}
		return out
	}
	if diff := cmp.Diff([]string{"n"}, msgs(ReplicaFailures([]*appsv1.ReplicaSet{a, b, n}, n))); diff != "" {
		t.Errorf("new first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, msgs(ReplicaFailures([]*appsv1.ReplicaSet{a, nil, b}, rs("n", 2, 1)))); diff != "" {
		t.Errorf("then all (-want +got):\n%s", diff)
	}
}
