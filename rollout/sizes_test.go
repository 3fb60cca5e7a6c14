package rollout

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
)

func TestNewRSNewReplicas(t *testing.T) {
	type result struct {
		N   int32
		Err string
	}
	noStrategy := deploy(10, "3", "2")
	noStrategy.Spec.Strategy.Type = ""
	noRU := deploy(10, "", "")
	noRU.Spec.Strategy.RollingUpdate = nil
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		old   []*appsv1.ReplicaSet
		newRS *appsv1.ReplicaSet
		want  result
	}{
		{"fresh rollout surges by maxSurge", deploy(10, "3", "2"), []*appsv1.ReplicaSet{rs("old", 0, 10)}, rs("new", 1, 0), result{3, ""}},
		{"at the surge ceiling: unchanged", deploy(10, "3", "2"), []*appsv1.ReplicaSet{rs("old", 0, 8)}, rs("new", 1, 5), result{5, ""}},
		{"never beyond D", deploy(10, "25%", "25%"), []*appsv1.ReplicaSet{rs("old", 0, 0)}, rs("new", 1, 8), result{10, ""}},
		{"percent surge rounds up", deploy(5, "10%", "0"), []*appsv1.ReplicaSet{rs("old", 0, 5)}, rs("new", 1, 0), result{1, ""}},
		{"raw maxSurge: 0 stays 0, no fencepost", deploy(5, "0", "0"), []*appsv1.ReplicaSet{rs("old", 0, 5)}, rs("new", 1, 0), result{0, ""}},
		{"over the ceiling already", deploy(3, "1", "0"), []*appsv1.ReplicaSet{rs("old", 0, 9)}, rs("new", 1, 1), result{1, ""}},
		{"recreate: D", recreateDeploy(7), nil, rs("new", 1, 2), result{7, ""}},
		{"nil maxSurge is an error here", deploy(10, "", "2"), nil, rs("new", 1, 0), result{0, "fatal"}},
		{"nil rollingUpdate is an error", noRU, nil, rs("new", 1, 0), result{0, "fatal"}},
		{"malformed maxSurge", deploy(10, "x%", "2"), nil, rs("new", 1, 0), result{0, "fatal"}},
		{"unknown strategy", noStrategy, nil, rs("new", 1, 0), result{0, "fatal"}},
		{"nil newRS", deploy(10, "3", "2"), nil, nil, result{0, "fatal"}},
		{"nil deployment", nil, nil, rs("new", 1, 0), result{0, "fatal"}},
		{"negative maxSurge: upstream's value, reported", deploy(10, "-2", "2"), []*appsv1.ReplicaSet{rs("old", 0, 5)}, rs("new", 1, 0), result{3, "ignored"}},
		{"int32 wrap like upstream", deploy(math.MaxInt32, "1", "0"), []*appsv1.ReplicaSet{rs("old", 0, 5)}, rs("new", 1, 0), result{0, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := append(cloneAll(tc.old), tc.newRS)
			n, err := NewRSNewReplicas(tc.d, all, tc.newRS)
			if diff := cmp.Diff(tc.want, result{n, errKind(err)}); diff != "" {
				t.Errorf("NewRSNewReplicas mismatch (-want +got):\n%s (err %v)", diff, err)
			}
		})
	}
}

func TestIsSaturated(t *testing.T) {
	d := deploy(3, "1", "0")
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		want bool
	}{
		{"saturated", rs("n", 0, 3, replicasAnn(3, 4)), true},
		{"nil", nil, false},
		{"no annotation", rs("n", 0, 3), false},
		{"bad annotation", rs("n", 0, 3, ann(DesiredReplicasAnnotation, "three")), false},
		{"annotation differs", rs("n", 0, 3, replicasAnn(2, 3)), false},
		{"not all available", rs("n", 0, 3, replicasAnn(3, 4), avail(2)), false},
		{"spec differs", rs("n", 0, 4, replicasAnn(3, 4), avail(3)), false},
		{"Atoi accepts a sign", rs("n", 0, 3, ann(DesiredReplicasAnnotation, "+3")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSaturated(d, tc.rs); got != tc.want {
				t.Errorf("IsSaturated() = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestTotals(t *testing.T) {
	a := rs("a", 0, 3, actual(2), ready(1), avail(1))
	b := rs("b", 1, 4, actual(4), ready(4), avail(3))
	rss := []*appsv1.ReplicaSet{a, nil, b}
	got := []int32{TotalReplicas(rss), TotalActualReplicas(rss), TotalReadyReplicas(rss), TotalAvailableReplicas(rss)}
	if diff := cmp.Diff([]int32{7, 6, 5, 4}, got); diff != "" {
		t.Errorf("totals mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names(FilterActive([]*appsv1.ReplicaSet{a, nil, rs("z", 0, 0), b, rs("neg", 0, -1)}))); diff != "" {
		t.Errorf("FilterActive mismatch (-want +got):\n%s", diff)
	}
}

func TestTotalTerminatingReplicas(t *testing.T) {
	withT := func(n int32) rsOpt { return func(r *appsv1.ReplicaSet) { r.Status.TerminatingReplicas = ptr(n) } }
	neverSynced := func(r *appsv1.ReplicaSet) { r.Status.ObservedGeneration = 0 }
	tests := []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want *int32
	}{
		{"empty is 0", nil, ptr[int32](0)},
		{"sum", []*appsv1.ReplicaSet{rs("a", 0, 1, withT(2)), nil, rs("b", 0, 1, withT(3))}, ptr[int32](5)},
		{"never synced is skipped", []*appsv1.ReplicaSet{rs("a", 0, 1, withT(2)), rs("b", 0, 1, neverSynced)}, ptr[int32](2)},
		{"synced without count is unknown", []*appsv1.ReplicaSet{rs("a", 0, 1, withT(2)), rs("b", 0, 1)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, TotalTerminatingReplicas(tc.rss)); diff != "" {
				t.Errorf("TotalTerminatingReplicas mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
