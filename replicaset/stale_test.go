package replicaset_test

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// laggingCache is a pod cache over a world that can be held back: while
// held, it lists the pods as they were when it was held, and the pod
// changes since wait to be reported to the expectations, as an informer
// whose watch is behind does. release catches up.
type laggingCache struct {
	w   *world
	exp *replicaset.Expectations

	mu      sync.Mutex
	held    bool
	frozen  []*corev1.Pod
	pending [][2]*corev1.Pod
}

func newLaggingCache(w *world) *laggingCache {
	c := &laggingCache{w: w}
	w.observers = append(w.observers, func(old, cur *corev1.Pod) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.held {
			c.pending = append(c.pending, [2]*corev1.Pod{old, cur})
			return
		}
		if c.exp != nil {
			observeExpectations(c.exp, old, cur)
		}
	})
	return c
}

func (c *laggingCache) hold() {
	pods := c.w.snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held, c.frozen = true, pods
}

func (c *laggingCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	for _, p := range c.pending {
		observeExpectations(c.exp, p[0], p[1])
	}
	c.pending = nil
}

func (c *laggingCache) List(ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	c.mu.Lock()
	held, frozen := c.held, c.frozen
	c.mu.Unlock()
	if !held {
		return c.w.listPods(ns, sel)
	}
	var out []*corev1.Pod
	for _, p := range frozen {
		if p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// A sync that starts while the controller's own creates are unobserved
// writes no status (e2e soak seed 283). Upstream writes status.replicas
// from its pod cache there; with the ReplicaSet just scaled to 0 by a
// Recreate rollout, that is replicas=0 at the current generation while the
// pods it created run, and the Deployment controller starts the new
// ReplicaSet beside them.
func TestReconcileWritesNoStatusFromAStaleCache(t *testing.T) {
	for _, eager := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "eager"}[eager], func(t *testing.T) {
			w := newWorld(t0)
			w.graceful = true
			w.addRS(newRS("web", 3))
			cache := newLaggingCache(w)
			r, err := replicaset.NewReconciler(replicaset.Config{
				ReplicaSets: rsReader{w}, Pods: cache, Client: w, Events: w, Clock: w.clock, EagerStatus: eager,
			})
			if err != nil {
				t.Fatal(err)
			}
			cache.exp = r.Expectations()

			cache.hold() // the pod cache stops here: empty
			if _, err := reconcile(t, r, "web"); err != nil {
				t.Fatal(err)
			}
			if n := len(w.snapshot()); n != 3 {
				t.Fatalf("first sync created %d pods; want 3", n)
			}
			// The Deployment controller scales the ReplicaSet to 0.
			scaled := w.rs(key("web")).DeepCopy()
			scaled.Spec.Replicas = ptr32(0)
			scaled.Generation = 2
			w.addRS(scaled)
			statuses := w.statuses
			res, err := reconcile(t, r, "web")
			if err != nil {
				t.Fatal(err)
			}
			if got := w.rs(key("web")).Status; w.statuses != statuses {
				t.Fatalf("a sync with 3 unobserved creates wrote status replicas=%d observedGeneration=%d", got.Replicas, got.ObservedGeneration)
			}
			if max := replicaset.ExpectationsTimeout + 2*time.Second; res.RequeueAfter <= 0 || res.RequeueAfter > max {
				t.Errorf("RequeueAfter = %v; want a sync by the time the expectations expire (≤ %v)", res.RequeueAfter, max)
			}

			// The cache catches up: the pods are deleted, and the status
			// written once those deletions are seen counts them as
			// terminating.
			cache.release()
			if _, err := reconcile(t, r, "web"); err != nil {
				t.Fatal(err)
			}
			if _, err := reconcile(t, r, "web"); err != nil {
				t.Fatal(err)
			}
			got := w.rs(key("web")).Status
			if got.ObservedGeneration != 2 || got.Replicas != 0 || got.TerminatingReplicas == nil || *got.TerminatingReplicas != 3 {
				t.Errorf("status = replicas %d, terminating %v, observedGeneration %d; want 0, 3, 2", got.Replicas, got.TerminatingReplicas, got.ObservedGeneration)
			}
		})
	}
}

var _ replicaset.PodLister = (*laggingCache)(nil)
