package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
)

func TestRolling(t *testing.T) {
	type result struct {
		Scales               []string
		ScaledNew, ScaledOld bool
		Err                  string
	}
	sameTime := func(name string, spec int32) *appsv1.ReplicaSet { return rs(name, 0, spec) }
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		want  result
	}{
		{
			name:  "step 1: the new ReplicaSet surges",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 0, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 10)},
			want:  result{Scales: []string{"scale rs/new 0→3"}, ScaledNew: true},
		},
		{
			name:  "step 2: old shrinks by what availability allows",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 3, tpl("v2"), avail(0)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 10)},
			want:  result{Scales: []string{"scale rs/old 10→8"}, ScaledOld: true},
		},
		{
			name:  "crashlooping new pods block scale-down (upstream case 1)",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 5, tpl("v2"), avail(0)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 8, avail(7))},
			want:  result{},
		},
		{
			name:  "after a rollback, unhealthy pods of the bad ReplicaSet go first",
			d:     deploy(10, "3", "2"),
			newRS: rs("good", 0, 8, tpl("v2"), avail(7)),
			old:   []*appsv1.ReplicaSet{rs("bad", 5, 5, avail(0))},
			want:  result{Scales: []string{"scale rs/bad 5→1"}, ScaledOld: true},
		},
		{
			name:  "rollover: two olds, oldest first, whatever the input order",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 9, 5, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old2", 1, 5), rs("old1", 0, 3)},
			want:  result{Scales: []string{"scale rs/old1 3→0", "scale rs/old2 5→3"}, ScaledOld: true},
		},
		{
			name:  "equal timestamps: name breaks the tie",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 9, 5, tpl("v2")),
			old:   []*appsv1.ReplicaSet{sameTime("b", 5), sameTime("a", 3)},
			want:  result{Scales: []string{"scale rs/a 3→0", "scale rs/b 5→3"}, ScaledOld: true},
		},
		{
			name:  "one ReplicaSet shrunk twice: unhealthy, then surplus",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 4, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 9, avail(8))},
			want:  result{Scales: []string{"scale rs/old 9→8", "scale rs/old 8→4"}, ScaledOld: true},
		},
		{
			name:  "new above D shrinks to D",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 12, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 0)},
			want:  result{Scales: []string{"scale rs/new 12→10"}, ScaledNew: true},
		},
		{
			name:  "complete: nothing to do",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 10, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 0)},
			want:  result{},
		},
		{
			name:  "inactive olds' availability does not count",
			d:     deploy(4, "1", "1"),
			newRS: rs("new", 5, 3, tpl("v2"), avail(2)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 0, avail(3)), rs("b", 1, 2, avail(2))},
			// maxScaledDown = 5-3-1 = 1; available = 2+2 = 4 > 3 → budget 1.
			want: result{Scales: []string{"scale rs/b 2→1"}, ScaledOld: true},
		},
		{
			name:  "more available than spec: upstream swallows the invalid request",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 10, tpl("v2"), avail(8)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 2, avail(5))},
			want:  result{Err: "ignored"},
		},
		{
			name:  "swallowed error keeps the earlier scales",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 8, tpl("v2"), avail(8)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 3, avail(1)), rs("b", 1, 2, avail(5))},
			want:  result{Scales: []string{"scale rs/a 3→1"}, Err: "ignored"},
		},
		{
			name:  "maxSurge nil: error as upstream",
			d:     deploy(10, "", "2"),
			newRS: rs("new", 5, 0, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 10)},
			want:  result{Err: "fatal"},
		},
		{
			name: "nil new ReplicaSet",
			d:    deploy(10, "3", "2"),
			old:  []*appsv1.ReplicaSet{rs("old", 0, 10)},
			want: result{Err: "fatal"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dBefore, newBefore, oldBefore := tc.d.DeepCopy(), tc.newRS.DeepCopy(), cloneAll(tc.old)
			oldOrder := names(tc.old)
			step, err := Rolling(tc.d, tc.newRS, tc.old)
			got := result{Scales: sizes(step.Scales), ScaledNew: step.ScaledNew, ScaledOld: step.ScaledOld, Err: errKind(err)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Rolling mismatch (-want +got):\n%s (err: %v)", diff, err)
			}
			unchanged(t, "deployment", dBefore, tc.d)
			unchanged(t, "newRS", newBefore, tc.newRS)
			unchanged(t, "oldRSs", oldBefore, tc.old)
			unchanged(t, "oldRSs order", oldOrder, names(tc.old))
		})
	}
}

func TestRollingScaleCarriesAnnotations(t *testing.T) {
	d := deploy(10, "3", "2")
	newRS := rs("new", 5, 0, tpl("v2"))
	step, err := Rolling(d, newRS, []*appsv1.ReplicaSet{rs("old", 0, 10)})
	if err != nil || len(step.Scales) != 1 {
		t.Fatalf("Rolling() = %v, %v; want one scale", step, err)
	}
	s := step.Scales[0]
	want := Scale{ReplicaSet: newRS, From: 0, To: 3, DesiredReplicas: 10, MaxReplicas: 13}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("Scale mismatch (-want +got):\n%s", diff)
	}
	applied := s.Scaled()
	if got := *applied.Spec.Replicas; got != 3 {
		t.Errorf("Apply().Spec.Replicas = %d; want 3", got)
	}
	wantAnn := map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"}
	if diff := cmp.Diff(wantAnn, applied.Annotations); diff != "" {
		t.Errorf("Apply().Annotations mismatch (-want +got):\n%s", diff)
	}
	if newRS.Annotations != nil || *newRS.Spec.Replicas != 0 {
		t.Error("Apply mutated the input ReplicaSet")
	}
	typ, reason, msg, ok := s.Event()
	if diff := cmp.Diff([]any{"Normal", "ScalingReplicaSet", "Scaled up replica set new from 0 to 3", true}, []any{typ, reason, msg, ok}); diff != "" {
		t.Errorf("Event mismatch (-want +got):\n%s", diff)
	}
	if _, _, _, ok := (Scale{From: 2, To: 2}).Event(); ok {
		t.Error("annotation-only Scale must not produce an event")
	}
}
