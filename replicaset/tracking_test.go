package replicaset_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/internal/queuetest"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// conflictRecorder is the world as a replicaset.Client, recording the
// status writes answered Conflict.
type conflictRecorder struct {
	*world
	mu        sync.Mutex
	conflicts []string
}

func (c *conflictRecorder) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := c.world.UpdateReplicaSetStatus(ctx, rs)
	if apierrors.IsConflict(err) {
		c.mu.Lock()
		c.conflicts = append(c.conflicts, rs.Name+" at resourceVersion "+rs.ResourceVersion)
		c.mu.Unlock()
	}
	return out, err
}

func (c *conflictRecorder) conflicted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.conflicts...)
}

// writes returns the number of pod creations and status writes (Conflicts
// included) the world has been asked for.
func (w *world) writes() (creates, statuses int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.creates, w.statuses
}

// The controller does not sync a ReplicaSet from a cached version that
// this process has replaced, by its own status write or by another
// controller's scale (informer.Cache.Wrote): it waits for the write's
// event. Upstream syncs at once, and its status write on the replaced
// version fails with Conflict.
func TestControllerWaitsForItsOwnWrites(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	for _, name := range []string{"a", "b"} {
		w.addPod(newPod(name, ownedBy(rs)))
	}
	// The test delivers the ReplicaSet events itself, so it decides when
	// the event of a write arrives. Pod events flow from the world.
	rsw := fakewatch.New(w.clock, "ReplicaSet watch")
	client := &conflictRecorder{world: w}
	done := queuetest.NewCounter()
	r := startControllerWith(t, w, controllerOpts{
		rss: informer.ListWatchFuncs[*appsv1.ReplicaSet]{
			ListFunc:  w.rsSource().List,
			WatchFunc: func(context.Context, string) (watch.Interface, error) { return rsw, nil },
		},
		client: client, metrics: done,
	})
	// syncs lets the clock settle and fails the test unless exactly n keys
	// have been processed since the start.
	syncs := func(n int) {
		t.Helper()
		r.settle(t)
		if got := done.Count(); got != n {
			t.Fatalf("%d keys processed; want %d", got, n)
		}
	}
	k := key("web")
	deliver := func() { rsw.Modify(w.rs(k)) } // the event of the last write
	check := func(step string, wantCreates, wantStatuses int) {
		t.Helper()
		if got := client.conflicted(); len(got) > 0 {
			t.Fatalf("%s: status writes answered Conflict: %q", step, got)
		}
		if creates, statuses := w.writes(); creates != wantCreates || statuses != wantStatuses {
			t.Fatalf("%s: %d pods created, %d status writes; want %d, %d", step, creates, statuses, wantCreates, wantStatuses)
		}
	}

	// The first sync writes the status; its event is held back.
	syncs(1)
	check("first sync", 0, 1)

	// Pod a turns ready, and its event enqueues the ReplicaSet before the
	// status write's event arrives: the sync is skipped.
	w.updatePod(key("a"), readySince(t0))
	syncs(2)
	check("pod event ahead of the status write's event", 0, 1)

	// The status write's event arrives: the sync runs and writes the ready
	// pod on the current version. Its own event then changes nothing.
	deliver()
	syncs(3)
	check("the status write's event", 0, 2)
	if got := w.rs(k).Status.ReadyReplicas; got != 1 {
		t.Errorf("readyReplicas = %d; want 1", got)
	}
	deliver()
	syncs(4)
	check("the second status write's event", 0, 2)

	// Another controller sharing the cache scales the ReplicaSet to 3 and
	// marks the cache, as the Deployment controller does. Pod b turns ready
	// before the scale's event arrives: nothing is decided on the old spec.
	cached, err := r.rss.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	scaled := w.rs(k).DeepCopy()
	*scaled.Spec.Replicas = 3
	scaled.Generation = 2
	w.addRS(scaled)
	r.rss.Wrote(k, cached.ResourceVersion)
	w.updatePod(key("b"), readySince(t0))
	syncs(5)
	check("pod event ahead of the scale's event", 0, 2)

	// The scale's event arrives: the sync creates the third pod and leaves
	// the status to the sync of the new pod's event, which counts it (the
	// two syncs run back to back, so only their sum is checked).
	deliver()
	syncs(7)
	check("the scale's event and the new pod's event", 1, 3)

	// That status write's event arrives: nothing has changed. (With
	// upstream's timing the scale's sync would have written the status,
	// the pod's sync been skipped as behind, and this one written again.)
	deliver()
	syncs(8)
	check("the last status write's event", 1, 3)
	want := appsv1.ReplicaSetStatus{
		Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2,
		ObservedGeneration: 2, TerminatingReplicas: new(int32),
	}
	if diff := cmp.Diff(want, w.rs(k).Status); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
	if got := activeOwned(w, rs); len(got) != 3 {
		t.Errorf("active pods %q; want 3", got)
	}
	if e, _ := r.c.Reconciler().Expectations().Get(k); !e.Fulfilled() {
		t.Errorf("expectations %+v; want fulfilled", e)
	}
}

var _ replicaset.Client = (*conflictRecorder)(nil)
