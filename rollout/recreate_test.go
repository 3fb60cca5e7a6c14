package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
}

func TestRecreate(t *testing.T) {
	type result struct {
		Scales                                      []string
		ScaledOld, OldPodsRunning, CreateNewReplica bool
	}
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		pods  map[types.UID][]*corev1.Pod
		want  result
	}{
		{
			name:  "scale every active old to 0, in input order",
			newRS: nil,
			old:   []*appsv1.ReplicaSet{rs("b", 1, 2), rs("z", 2, 0), rs("a", 0, 3)},
			want:  result{Scales: []string{"scale rs/b 2→0", "scale rs/a 3→0"}, ScaledOld: true},
		},
		{
			name: "old ReplicaSet still reports replicas",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(1))},
			want: result{OldPodsRunning: true},
		},
		{
			name: "an old pod still pending",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0))},
			pods: map[types.UID][]*corev1.Pod{"a-uid": {pod(corev1.PodSucceeded), pod(corev1.PodPending)}},
			want: result{OldPodsRunning: true},
		},
		{
			name: "old pods all terminal: create the new ReplicaSet",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0))},
			pods: map[types.UID][]*corev1.Pod{"a-uid": {pod(corev1.PodSucceeded), pod(corev1.PodFailed), nil}},
			want: result{CreateNewReplica: true},
		},
		{
			name:  "new pods do not block; scale new to D",
			newRS: rs("new", 5, 1, tpl("v2")),
			old:   []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0))},
			pods:  map[types.UID][]*corev1.Pod{"new-uid": {pod(corev1.PodRunning)}},
			want:  result{Scales: []string{"scale rs/new 1→4"}},
		},
		{
			name:  "already at D",
			newRS: rs("new", 5, 4, tpl("v2")),
			want:  result{},
		},
		{
			name: "old status not yet current: wait (deviation: upstream creates the new ReplicaSet)",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0), func(r *appsv1.ReplicaSet) { r.Generation = 2 })},
			want: result{OldPodsRunning: true},
		},
		{
			name: "old status current at its generation: create",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0), func(r *appsv1.ReplicaSet) { r.Generation, r.Status.ObservedGeneration = 2, 2 })},
			want: result{CreateNewReplica: true},
		},
		{
			name: "unknown phase counts as running",
			old:  []*appsv1.ReplicaSet{rs("a", 0, 0, actual(0))},
			pods: map[types.UID][]*corev1.Pod{"a-uid": {pod(corev1.PodUnknown)}},
			want: result{OldPodsRunning: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := recreateDeploy(4)
			oldBefore := cloneAll(tc.old)
			step, err := Recreate(d, tc.newRS, tc.old, tc.pods)
			if err != nil {
				t.Fatalf("Recreate: %v", err)
			}
			got := result{sizes(step.Scales), step.ScaledOld, step.OldPodsRunning, step.CreateNewReplicaSet}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Recreate mismatch (-want +got):\n%s", diff)
			}
			if step.Scaled() != (tc.want.ScaledOld || tc.want.OldPodsRunning) {
				t.Errorf("Scaled() = %v", step.Scaled())
			}
			unchanged(t, "oldRSs", oldBefore, tc.old)
		})
	}
}
