package replicaset_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

func TestCollectPods(t *testing.T) {
	pods := make([]*corev1.Pod, 6)
	for i := range pods {
		pods[i] = newPod(fmt.Sprint("p", i))
	}
	first, second := pods[:4], pods[4:]
	cases := []struct {
		name       string
		kept       []*corev1.Pod
		wantShared bool
	}{
		{name: "nothing kept", kept: nil, wantShared: true},
		{name: "all of the first list", kept: first, wantShared: true},
		{name: "a prefix of the first list", kept: first[:2], wantShared: true},
		{name: "one skipped", kept: []*corev1.Pod{first[0], first[2], first[3]}, wantShared: false},
		{name: "first list then second", kept: pods, wantShared: false},
		{name: "second list only", kept: second, wantShared: false},
		{name: "out of order", kept: []*corev1.Pod{first[1], first[0]}, wantShared: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(first)
			got, shared := replicaset.CollectPods(first, len(pods), tc.kept)
			if diff := cmp.Diff(names(tc.kept), names(got)); diff != "" {
				t.Errorf("CollectPods mismatch (-want +got):\n%s", diff)
			}
			if shared != tc.wantShared {
				t.Errorf("CollectPods shared = %v; want %v", shared, tc.wantShared)
			}
			if !slices.Equal(before, first) {
				t.Errorf("CollectPods modified the shared list: %v; was %v", names(first), names(before))
			}
		})
	}
}

// TestCollectPodsRandom keeps random subsequences of two lists, in the
// order the Reconciler reads them, and checks the result against append.
func TestCollectPodsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pool := make([]*corev1.Pod, 10)
	for i := range pool {
		pool[i] = newPod(fmt.Sprint("p", i))
	}
	for range 2000 {
		// Lists may repeat a pod: the collector must not rely on identity.
		a, b := make([]*corev1.Pod, r.IntN(6)), make([]*corev1.Pod, r.IntN(4))
		for i := range a {
			a[i] = pool[r.IntN(len(pool))]
		}
		for i := range b {
			b[i] = pool[r.IntN(len(pool))]
		}
		var kept []*corev1.Pod
		for _, p := range slices.Concat(a, b) {
			if r.IntN(4) != 0 {
				kept = append(kept, p)
			}
		}
		before := slices.Clone(a)
		got, _ := replicaset.CollectPods(a, len(a)+len(b), kept)
		if !slices.Equal(got, kept) {
			t.Fatalf("CollectPods(%v, %v) = %v", names(a), names(kept), names(got))
		}
		if !slices.Equal(before, a) {
			t.Fatalf("CollectPods modified the shared list: %v; was %v", names(a), names(before))
		}
	}
}
