package replicaset_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// frozenPods is a pod cache that stops following the world while frozen:
// an informer whose watch lags.
type frozenPods struct {
	w      *world
	mu     sync.Mutex
	frozen []*corev1.Pod // nil: follow the world
}

func (f *frozenPods) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = f.w.snapshot()
}

func (f *frozenPods) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = nil
}

func (f *frozenPods) List(ctx context.Context, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	f.mu.Lock()
	frozen := f.frozen
	f.mu.Unlock()
	if frozen == nil {
		return f.w.listPods(ctx, ns, sel)
	}
	var out []*corev1.Pod
	for _, p := range frozen {
		if p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

var _ reconcile.Lister[*corev1.Pod] = (*frozenPods)(nil)

// kubernetes#129795, in one Reconciler: its pod cache stops following the
// API server after it creates (or deletes) pods, and stays behind past the
// expectations' TTL. A sync after the expiry reads the pods it waits for
// live, finds its cache behind, renews the expectation (an
// ExpectationsRenewed event) and creates (deletes) nothing; once the
// cache has caught up it goes on. With TrustExpiredExpectations, as
// upstream, it acts on the stale cache: 2 pods too many.
func TestReconcileRenewsExpiredExpectationsBehindTheCache(t *testing.T) {
	for _, tc := range []struct {
		name         string
		from, to     int32
		trustExpired bool
		wantPods     int // active pods after the sync past the TTL
	}{
		{name: "creations", from: 3, to: 5, wantPods: 5},
		{name: "creations, upstream", from: 3, to: 5, trustExpired: true, wantPods: 7},
		{name: "deletions", from: 5, to: 3, wantPods: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t0)
			rs := w.addRS(newRS("web", tc.from))
			for _, n := range []string{"a", "b", "c", "d", "e"}[:tc.from] {
				w.addPod(newPod(n, ownedBy(rs), onNode("n-"+n), readySince(t0.Add(-time.Hour))))
			}
			pods := &frozenPods{w: w}
			r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
				ReplicaSets: rsReader{w}, Pods: pods, Client: w, Events: w, Clock: w.clock,
				TrustExpiredExpectations: tc.trustExpired,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			k := keyOf(rs)
			if _, err := r.Reconcile(ctx, k); err != nil {
				t.Fatal(err)
			}
			pods.freeze()
			scaled := w.rs(k).DeepCopy()
			scaled.Spec.Replicas = &tc.to
			scaled.Generation++
			w.addRS(scaled)
			if _, err := r.Reconcile(ctx, k); err != nil { // creates or deletes 2; the cache does not see it
				t.Fatal(err)
			}
			w.takeEvents()
			w.clock.Step(replicaset.ExpectationsTimeout + time.Second)
			if _, err := r.Reconcile(ctx, k); err != nil {
				t.Fatal(err)
			}
			if got := len(activeOwned(w, rs)); got != tc.wantPods {
				t.Errorf("after the sync past the TTL: %d active pods; want %d", got, tc.wantPods)
			}
			renewed := false
			for _, e := range w.takeEvents() {
				renewed = renewed || strings.HasPrefix(e, "Warning "+replicaset.ReasonExpectationsRenewed+" ")
			}
			if renewed == tc.trustExpired {
				t.Errorf("an ExpectationsRenewed event: %t; want %t", renewed, !tc.trustExpired)
			}
			if tc.trustExpired {
				return
			}
			// The cache catches up: the next syncs have nothing to correct.
			pods.thaw()
			for range 2 {
				if _, err := r.Reconcile(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if got := len(activeOwned(w, rs)); got != int(tc.to) {
				t.Errorf("once the cache caught up: %d active pods; want %d", got, tc.to)
			}
		})
	}
}
