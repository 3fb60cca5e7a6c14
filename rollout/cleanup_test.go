package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCleanup(t *testing.T) {
	gone := func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = ptr(metav1.NewTime(t0)) }
	stale := func(r *appsv1.ReplicaSet) { r.Generation = 3; r.Status.ObservedGeneration = 2 }
	olds := func(extra ...rsOpt) []*appsv1.ReplicaSet {
		return []*appsv1.ReplicaSet{
			rs("r5", 0, 0, rev("5")), rs("r1", 1, 0, rev("1")), rs("r3", 2, 0, rev("3")),
			rs("r2", 3, 0, append([]rsOpt{rev("2")}, extra...)...), rs("r4", 4, 0, rev("4")),
		}
	}
	limit := func(n *int32) *appsv1.Deployment {
		d := deploy(1, "1", "0")
		d.Spec.RevisionHistoryLimit = n
		return d
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		old  []*appsv1.ReplicaSet
		want []string
	}{
		{"lowest revisions first", limit(ptr[int32](2)), olds(), []string{"r1", "r2", "r3"}},
		{"limit 0 deletes all", limit(ptr[int32](0)), olds(), []string{"r1", "r2", "r3", "r4", "r5"}},
		{"within the limit", limit(ptr[int32](5)), olds(), nil},
		{"no limit", limit(nil), olds(), nil},
		{"pods left: kept, slot used", limit(ptr[int32](2)), olds(actual(1)), []string{"r1", "r3"}},
		{"spec left: kept", limit(ptr[int32](2)), olds(func(r *appsv1.ReplicaSet) { r.Spec.Replicas = ptr[int32](1) }), []string{"r1", "r3"}},
		{"stale status: kept", limit(ptr[int32](2)), olds(stale), []string{"r1", "r3"}},
		{"being deleted: not counted", limit(ptr[int32](2)), olds(gone), []string{"r1", "r3"}},
		{"unparseable revision sorts by creation", limit(ptr[int32](4)), []*appsv1.ReplicaSet{
			rs("late", 9, 0, rev("1")), rs("bad", 1, 0, rev("x")), rs("r2", 2, 0, rev("2")), rs("r3", 3, 0, rev("3")), rs("r4", 4, 0, rev("4")),
		}, []string{"bad"}},
		{"negative limit stops at the end", limit(ptr[int32](-3)), olds()[:2], []string{"r1", "r5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneAll(tc.old)
			got := names(Cleanup(tc.d, tc.old))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Cleanup mismatch (-want +got):\n%s", diff)
			}
			unchanged(t, "oldRSs", before, tc.old)
		})
	}
}
