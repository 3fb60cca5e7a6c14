package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/planner"
)

// step builds a trace step of a 10-replica Deployment at second sec from
// (name, revision, spec, available) tuples; the last ReplicaSet is new.
func step(sec int, rss ...planner.ReplicaSetState) planner.Step {
	st := planner.Step{Time: t0.Add(time.Duration(sec) * time.Second), Replicas: 10, Generation: 1,
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1}}
	for i, rs := range rss {
		rs.New = i == len(rss)-1
		rs.Replicas, rs.Ready = rs.Spec, rs.Available
		st.ReplicaSets = append(st.ReplicaSets, rs)
		st.Revision = max(st.Revision, rs.Revision)
	}
	return st
}

// stale makes st a step of generation 2 whose status still says 1: the
// template changed and the controller has not observed it yet.
func stale(st planner.Step) planner.Step {
	st.Generation = 2
	return st
}

// observed makes st's status observe its generation.
func observed(st planner.Step) planner.Step {
	st.Status.ObservedGeneration = st.Generation
	return st
}

func rs(name string, rev int64, spec, avail int32) planner.ReplicaSetState {
	return planner.ReplicaSetState{Name: name, Revision: rev, Spec: spec, Available: avail}
}

func TestCheck(t *testing.T) {
	d := web(10, "web:2", pct("25%"), pct("25%")) // surge 3, min available 8
	complete := step(30, rs("a", 1, 0, 0), rs("b", 2, 10, 10))
	complete.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 10, UpdatedReplicas: 10, AvailableReplicas: 10}
	progressing := func(reason string) planner.Step {
		s := complete
		s.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reason}}
		return s
	}
	scaled := step(5, rs("a", 1, 12, 8), rs("b", 2, 6, 0))
	scaled.Replicas, scaled.ScalingEvent = 15, true
	tests := []struct {
		name  string
		trace planner.Trace
		want  []planner.Violation
	}{
		{name: "upstream first steps", trace: planner.Trace{
			step(0, rs("a", 1, 10, 10)),
			step(0, rs("a", 1, 8, 10), rs("b", 2, 3, 0)),
			step(0, rs("a", 1, 8, 8), rs("b", 2, 5, 0)),
		}},
		{name: "surge", trace: planner.Trace{
			step(0, rs("a", 1, 10, 10)),
			step(1, rs("a", 1, 10, 10), rs("b", 2, 5, 0)),
		}, want: []planner.Violation{{Step: 1, Time: t0.Add(time.Second), Code: planner.SurgeExceeded,
			Message: "15 pods specified > 10 replicas + 3 maxSurge"}}},
		{name: "surge tolerated in a scaling event", trace: planner.Trace{
			step(0, rs("a", 1, 8, 8), rs("b", 2, 5, 0)), scaled,
		}},
		{name: "unavailable", trace: planner.Trace{
			step(0, rs("a", 1, 10, 10), rs("b", 2, 3, 0)),
			step(2, rs("a", 1, 7, 7), rs("b", 2, 3, 0)),
		}, want: []planner.Violation{{Step: 1, Time: t0.Add(2 * time.Second), Code: planner.UnavailableExceeded,
			Message: "scale-down leaves at most 7 available < 8 minimum (10 replicas − 2 maxUnavailable)"}}},
		{name: "removing unavailable pods is fine", trace: planner.Trace{
			step(0, rs("a", 1, 10, 6), rs("b", 2, 3, 0)),
			step(2, rs("a", 1, 6, 6), rs("b", 2, 3, 0)),
		}},
		{name: "revision down", trace: planner.Trace{
			step(0, rs("a", 3, 10, 10)),
			step(1, rs("a", 2, 10, 10)),
		}, want: []planner.Violation{
			{Step: 1, Time: t0.Add(time.Second), Code: planner.RevisionDecreased, Message: "deployment revision went from 3 to 2"},
			{Step: 1, Time: t0.Add(time.Second), Code: planner.RevisionDecreased, Message: "replica set a went from revision 3 to 2"},
		}},
		{name: "new replica set with an old revision", trace: planner.Trace{
			step(0, rs("a", 3, 10, 10)),
			step(1, rs("b", 2, 0, 0), rs("a", 3, 10, 10)),
		}, want: []planner.Violation{{Step: 1, Time: t0.Add(time.Second), Code: planner.RevisionDecreased,
			Message: "new replica set b has revision 2, not above 3"}}},
		{name: "old scaled up", trace: planner.Trace{
			step(0, rs("a", 1, 5, 5), rs("b", 2, 5, 5)),
			step(1, rs("a", 1, 6, 5), rs("b", 2, 4, 4)),
		}, want: []planner.Violation{{Step: 1, Time: t0.Add(time.Second), Code: planner.OldScaledUp,
			Message: "old replica set a (revision 1) scaled up from 5 to 6"}}},
		{name: "previous template rolled forward before the controller saw the change", trace: planner.Trace{
			step(0, rs("a", 1, 5, 5), rs("b", 2, 5, 5)),
			stale(step(1, rs("a", 1, 5, 5), rs("b", 2, 5, 5), rs("c", 3, 0, 0))),
			stale(step(2, rs("a", 1, 5, 5), rs("b", 2, 6, 5), rs("c", 3, 0, 0))),
		}},
		{name: "old scaled up after the new generation was observed", trace: planner.Trace{
			step(0, rs("a", 1, 5, 5), rs("b", 2, 5, 5)),
			observed(stale(step(1, rs("a", 1, 5, 5), rs("b", 2, 5, 5), rs("c", 3, 0, 0)))),
			observed(stale(step(2, rs("a", 1, 5, 5), rs("b", 2, 6, 5), rs("c", 3, 0, 0)))),
		}, want: []planner.Violation{{Step: 2, Time: t0.Add(2 * time.Second), Code: planner.OldScaledUp,
			Message: "old replica set b (revision 2) scaled up from 5 to 6"}}},
		{name: "an older template than the one last observed", trace: planner.Trace{
			step(0, rs("a", 1, 5, 5), rs("b", 2, 5, 5)),
			stale(step(1, rs("a", 1, 6, 5), rs("b", 2, 5, 5), rs("c", 3, 0, 0))),
		}, want: []planner.Violation{{Step: 1, Time: t0.Add(time.Second), Code: planner.OldScaledUp,
			Message: "old replica set a (revision 1) scaled up from 5 to 6"}}},
		{name: "complete without condition", trace: planner.Trace{progressing("ReplicaSetUpdated")},
			want: []planner.Violation{{Step: 0, Time: t0.Add(30 * time.Second), Code: planner.CompleteNotReported,
				Message: "all 10 replicas updated and available but Progressing is True/ReplicaSetUpdated"}}},
		{name: "complete and reported", trace: planner.Trace{progressing("NewReplicaSetAvailable")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planner.Check(tt.trace, d)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTraceFrom(t *testing.T) {
	d := web(10, "web:2", pct("25%"), pct("25%"))
	d.UID, d.Generation = "d-uid", 2
	old := previous(t, d, "web:1")[0]
	old.UID = "old-uid"
	old.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	old.Status = appsv1.ReplicaSetStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10}
	scaledUp := d.DeepCopy()
	scaledUp.Spec.Replicas = ptr[int32](12)
	other := old.DeepCopy()
	other.Name, other.UID, other.OwnerReferences = "someone-else", "x", nil

	tr, err := planner.TraceFrom([]planner.Snapshot{
		{Time: t0, Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old, other}},
		{Time: t0.Add(time.Second), Deployment: scaledUp, ReplicaSets: []*appsv1.ReplicaSet{old}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := planner.ReplicaSetState{Name: old.Name, Revision: 1, Spec: 10, Replicas: 10, Ready: 10, Available: 10}
	if diff := cmp.Diff([]planner.ReplicaSetState{want}, tr[0].ReplicaSets); diff != "" {
		t.Errorf("TraceFrom step 0 mismatch (-want +got):\n%s", diff)
	}
	if tr[0].ScalingEvent || !tr[1].ScalingEvent {
		t.Errorf("ScalingEvent = %t, %t; want false, true", tr[0].ScalingEvent, tr[1].ScalingEvent)
	}
	if _, err := planner.TraceFrom([]planner.Snapshot{{Time: t0}}); err == nil {
		t.Error("TraceFrom without a Deployment: no error")
	}
}

// TestTraceBuilder: a trace built one snapshot at a time is, after each
// snapshot, the trace TraceFrom builds from all of them so far, and the
// traces it returned earlier do not change.
func TestTraceBuilder(t *testing.T) {
	d := web(4, "web:2", num(1), num(1))
	d.UID, d.Generation = "d-uid", 2
	owned := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		return rs
	}
	old := owned(previous(t, d, "web:1")[0])
	old.UID, old.Status = "old-uid", appsv1.ReplicaSetStatus{Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4}
	fresh := owned(previous(t, d, "web:2")[0])
	fresh.Name, fresh.UID = "web-new", "new-uid"
	fresh.Annotations["deployment.kubernetes.io/revision"] = "2"
	fresh.Spec.Replicas = ptr[int32](1)
	oldDown := old.DeepCopy()
	oldDown.Spec.Replicas = ptr[int32](3)
	freshUp := fresh.DeepCopy()
	freshUp.Spec.Replicas, freshUp.Status = ptr[int32](2), appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}
	scaled := d.DeepCopy()
	scaled.Spec.Replicas = ptr[int32](6)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	snaps := []planner.Snapshot{
		{Time: at(0), Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old}},
		{Time: at(1), Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old, fresh}},
		{Time: at(2), Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{oldDown, fresh}},
		{Time: at(3), Deployment: scaled, ReplicaSets: []*appsv1.ReplicaSet{oldDown, freshUp}},
		{Time: at(4), Deployment: scaled, ReplicaSets: []*appsv1.ReplicaSet{oldDown, freshUp}},
	}
	var b planner.TraceBuilder
	var got []planner.Trace
	for i, s := range snaps {
		if err := b.Add(s); err != nil {
			t.Fatal(err)
		}
		want, err := planner.TraceFrom(snaps[:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, b.Trace()); diff != "" {
			t.Errorf("after snapshot %d, Trace mismatch (-TraceFrom +built):\n%s", i, diff)
		}
		got = append(got, b.Trace())
	}
	for i, tr := range got {
		want, _ := planner.TraceFrom(snaps[:i+1])
		if diff := cmp.Diff(want, tr); diff != "" {
			t.Errorf("the trace returned after snapshot %d changed (-want +got):\n%s", i, diff)
		}
	}
	// Step 3 scales 4 to 6 replicas; step 2 does not.
	if tr := got[len(got)-1]; tr[2].ScalingEvent || !tr[3].ScalingEvent || !tr[1].ReplicaSets[1].New {
		t.Errorf("ScalingEvent at 2 and 3 = %t, %t (want false, true); new at 1 = %+v", tr[2].ScalingEvent, tr[3].ScalingEvent, tr[1].ReplicaSets)
	}
	if err := b.Add(planner.Snapshot{Time: at(5)}); err == nil || err.Error() != "planner: snapshot 5 has no Deployment" {
		t.Errorf("Add without a Deployment: %v, want the snapshot's number", err)
	}
}
