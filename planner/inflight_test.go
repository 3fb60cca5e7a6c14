package planner_test

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/planner"
)

// TestPlanInFlight: a rollout whose last pod is still coming up completes
// when that pod is available, not at once; with minReadySeconds too.
func TestPlanInFlight(t *testing.T) {
	for _, minReady := range []int32{0, 5} {
		d := web(2, "web:2", num(1), num(0))
		d.Spec.MinReadySeconds = minReady
		cur := previous(t, d, "web:2") // the new template's ReplicaSet, at full size
		cur[0].Spec.MinReadySeconds = minReady
		for _, tc := range []struct {
			inFlight map[string][]time.Duration
			want     time.Duration
		}{
			{nil, 0},
			{map[string][]time.Duration{cur[0].Name: {8 * time.Second}}, 8 * time.Second},
			{map[string][]time.Duration{cur[0].Name: {3 * time.Second, 8 * time.Second, time.Hour}}, 8 * time.Second}, // at most spec.replicas
			{map[string][]time.Duration{cur[0].Name: {-time.Second}}, 0},
		} {
			tl, err := planner.Simulate(d, cur, planner.PodModel{ReadyAfter: 2 * time.Second}, planner.Options{Seed: 1, InFlight: tc.inFlight})
			if err != nil {
				t.Fatal(err)
			}
			if !tl.Complete || tl.Duration != tc.want {
				t.Errorf("minReadySeconds %d, in flight %v: complete %t after %s; want after %s\n%s", minReady, tc.inFlight, tl.Complete, tl.Duration, tc.want, tl)
			}
		}
	}
}
