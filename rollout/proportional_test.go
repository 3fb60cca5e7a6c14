package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
)

func TestProportional(t *testing.T) {
	type result struct {
		Scales []string
		Err    string
	}
	paused := deploy(5, "3", "2")
	paused.Status.Replicas = 0
	statusFallback := deploy(10, "0", "1")
	statusFallback.Status.Replicas = 5
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		want  result
	}{
		{
			name:  "one active ReplicaSet takes D",
			d:     deploy(12, "3", "2"),
			newRS: rs("new", 5, 10, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 0)},
			want:  result{Scales: []string{"scale rs/new 10→12"}},
		},
		{
			name:  "nothing active: the new one takes D",
			d:     paused,
			newRS: rs("new", 5, 0, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 0)},
			want:  result{Scales: []string{"scale rs/new 0→5"}},
		},
		{
			name: "nothing active, no new one: the newest old takes D",
			d:    deploy(2, "1", "0"),
			old:  []*appsv1.ReplicaSet{rs("older", 0, 0), rs("newer", 3, 0), rs("mid", 1, 0)},
			want: result{Scales: []string{"scale rs/newer 0→2"}},
		},
		{
			name:  "saturated new: olds to 0, newest first",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 10, tpl("v2"), replicasAnn(10, 13)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 2), rs("b", 1, 1)},
			want:  result{Scales: []string{"scale rs/b 1→0", "scale rs/a 2→0"}},
		},
		{
			name:  "scale up 10→12: shares by size, largest first",
			d:     deploy(12, "3", "2"),
			newRS: rs("new", 5, 5, tpl("v2"), replicasAnn(10, 13)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 8, replicasAnn(10, 13))},
			want:  result{Scales: []string{"scale rs/old 8→9", "scale rs/new 5→6"}},
		},
		{
			name:  "scale down 10→5",
			d:     deploy(5, "3", "2"),
			newRS: rs("new", 5, 5, tpl("v2"), replicasAnn(10, 13)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 8, replicasAnn(10, 13))},
			want:  result{Scales: []string{"scale rs/old 8→5", "scale rs/new 5→3"}},
		},
		{
			name:  "2.5 rounds to 3; equal sizes grow newest first",
			d:     deploy(5, "0", "1"),
			newRS: rs("b", 1, 1, tpl("v2"), replicasAnn(2, 2)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 1, replicasAnn(2, 2))},
			want:  result{Scales: []string{"scale rs/b 1→3", "scale rs/a 1→2"}},
		},
		{
			name:  "leftover goes to the first",
			d:     deploy(10, "0", "1"),
			newRS: rs("c", 2, 1, tpl("v2"), replicasAnn(3, 3)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 1, replicasAnn(3, 3)), rs("b", 1, 1, replicasAnn(3, 3))},
			want:  result{Scales: []string{"scale rs/c 1→4", "scale rs/b 1→3", "scale rs/a 1→3"}},
		},
		{
			name:  "equal sizes shrink oldest first",
			d:     deploy(3, "0", "1"),
			newRS: rs("b", 1, 2, tpl("v2"), replicasAnn(4, 4)),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 2, replicasAnn(4, 4))},
			// toAdd −1: a first: round(2·3/4)=2 → 0 … b: 0; leftover −1 to a.
			want: result{Scales: []string{"scale rs/a 2→1", "scale rs/b 2→2"}},
		},
		{
			name:  "no size change: annotation-only updates",
			d:     deploy(10, "3", "2"),
			newRS: rs("new", 5, 5, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 8, replicasAnn(10, 13))},
			want:  result{Scales: []string{"scale rs/new 5→5"}},
		},
		{
			name:  "D=0: everything to 0, larger first",
			d:     deploy(0, "3", "2"),
			newRS: rs("new", 5, 2, tpl("v2"), replicasAnn(5, 8)),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 3, replicasAnn(5, 8))},
			want:  result{Scales: []string{"scale rs/old 3→0", "scale rs/new 2→0"}},
		},
		{
			name:  "missing max annotation falls back to status.replicas",
			d:     statusFallback,
			newRS: rs("new", 5, 2, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 3)},
			// toAdd 5: old round(3·10/5)−3=3 → 6; new round(2·10/5)−2=2 → 4.
			want: result{Scales: []string{"scale rs/old 3→6", "scale rs/new 2→4"}},
		},
		{
			name:  "missing annotation and status: the first gets everything",
			d:     deploy(10, "0", "1"),
			newRS: rs("new", 5, 2, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 3)},
			want:  result{Scales: []string{"scale rs/old 3→8", "scale rs/new 2→2"}},
		},
		{
			name:  "invalid max annotation is reported",
			d:     statusFallback,
			newRS: rs("new", 5, 2, tpl("v2"), ann(MaxReplicasAnnotation, "-4")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 3)},
			want:  result{Scales: []string{"scale rs/old 3→6", "scale rs/new 2→4"}, Err: "ignored"},
		},
		{
			name:  "recreate with several active: nothing",
			d:     recreateDeploy(5),
			newRS: rs("new", 5, 2, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("old", 0, 3)},
			want:  result{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newBefore, oldBefore, order := tc.newRS.DeepCopy(), cloneAll(tc.old), names(tc.old)
			scales, err := Proportional(tc.d, tc.newRS, tc.old)
			if diff := cmp.Diff(tc.want, result{sizes(scales), errKind(err)}); diff != "" {
				t.Errorf("Proportional mismatch (-want +got):\n%s (err %v)", diff, err)
			}
			unchanged(t, "newRS", newBefore, tc.newRS)
			unchanged(t, "oldRSs", oldBefore, tc.old)
			unchanged(t, "oldRSs order", order, names(tc.old))
		})
	}
}

func TestProportionAndFraction(t *testing.T) {
	d := deploy(12, "3", "2") // newMax 15
	r := rs("r", 0, 8, replicasAnn(10, 13))
	tests := []struct {
		name         string
		rs           *appsv1.ReplicaSet
		toAdd, added int32
		want         int32
	}{
		{"fraction clamps to what is left (up)", r, 2, 1, 1},
		{"fraction below allowance", r, 5, 0, 1},
		{"nothing left", r, 2, 2, 0},
		{"zero toAdd", r, 0, 0, 0},
		{"never grow from zero", rs("z", 0, 0, replicasAnn(10, 13)), 5, 0, 0},
		{"nil", nil, 5, 0, 0},
		{"shrinking clamps with max", rs("s", 0, 8, replicasAnn(10, 30)), -1, 0, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Proportion(tc.rs, d, tc.toAdd, tc.added)
			if err != nil || got != tc.want {
				t.Errorf("Proportion() = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if f, _ := proportionOf(r, deploy(0, "3", "2")); f != -8 {
		t.Errorf("proportionOf with D=0 = %d; want -8", f)
	}
	if f, _ := proportionOf(rs("h", 0, 1, replicasAnn(2, 2)), deploy(5, "0", "1")); f != 2 {
		t.Errorf("proportionOf(1·5/2) = %d; want 2 (2.5 rounds half away from zero)", f)
	}
}

func TestIsScalingEvent(t *testing.T) {
	d := deploy(5, "1", "0")
	tests := []struct {
		name    string
		newRS   *appsv1.ReplicaSet
		old     []*appsv1.ReplicaSet
		want    bool
		wantErr string
	}{
		{"annotations match", rs("n", 1, 5, replicasAnn(5, 6)), nil, false, ""},
		{"new differs", rs("n", 1, 5, replicasAnn(4, 5)), nil, true, ""},
		{"inactive old ignored", rs("n", 1, 5, replicasAnn(5, 6)), []*appsv1.ReplicaSet{rs("o", 0, 0, replicasAnn(3, 4))}, false, ""},
		{"active old differs", nil, []*appsv1.ReplicaSet{rs("o", 0, 2, replicasAnn(3, 4))}, true, ""},
		{"no annotation", rs("n", 1, 5), nil, false, ""},
		{"invalid annotation skipped and reported", rs("n", 1, 5, ann(DesiredReplicasAnnotation, "x")), nil, false, "ignored"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IsScalingEvent(d, tc.newRS, tc.old)
			if got != tc.want || errKind(err) != tc.wantErr {
				t.Errorf("IsScalingEvent() = %v, %v; want %v, %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
