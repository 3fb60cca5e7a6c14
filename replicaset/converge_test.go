package replicaset_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReconcileConverges starts from random worlds (too many, too few,
// orphans, pods of other owners, terminating and finished pods) and checks
// that repeated syncs reach exactly spec.replicas active owned pods,
// without touching anything that is not the ReplicaSet's to touch.
func TestReconcileConverges(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for iter := range 60 {
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			w := newWorld(t0)
			w.graceful = r.IntN(2) == 0
			spec := int32(r.IntN(8))
			rs := w.addRS(newRS("web", spec))
			other := newRS("other", 1)
			match := withLabels(map[string]string{"app": "web"})
			var foreign []string
			for i := range r.IntN(12) {
				name := fmt.Sprintf("seed%02d", i)
				var opts []podOpt
				switch r.IntN(6) {
				case 0:
					opts = append(opts, match) // orphan to adopt
				case 1:
					opts = append(opts, ownedBy(other), match)
					foreign = append(foreign, name)
				case 2:
					opts = append(opts, ownedBy(rs), deletingAt(t0))
				case 3:
					opts = append(opts, ownedBy(rs), inPhase(corev1.PodFailed))
				default:
					opts = append(opts, ownedBy(rs), onNode("n1"), readySince(t0.Add(-time.Minute)))
				}
				w.addPod(newPod(name, opts...))
			}
			rec := newReconciler(t, w, true)
			for range 20 {
				if _, err := rec.Reconcile(context.Background(), key("web")); err != nil {
					t.Fatal(err)
				}
				w.reap()
				w.clock.Step(time.Second)
			}
			if got := activeOwned(w, rs); len(got) != int(spec) {
				t.Fatalf("world has %d active owned pods %v; want %d", len(got), got, spec)
			}
			for _, p := range w.snapshot() {
				for _, f := range foreign {
					if p.Name == f && !metav1.IsControlledBy(p, other) {
						t.Errorf("pod %s of another owner was taken", f)
					}
				}
			}
			if st := w.rs(key("web")).Status; st.Replicas != spec {
				t.Errorf("status.replicas = %d; want %d", st.Replicas, spec)
			}
		})
	}
}
