package replicaset_test

import (
	"context"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/internal/queuetest"
)

// skipHook is a queue hook that also counts skipped syncs.
type skipHook struct {
	*queuetest.Counter
	skipped *atomic.Int64
}

var _ interface{ SyncSkipped() } = skipHook{}

func (s skipHook) SyncSkipped() { s.skipped.Add(1) }

// A sync skipped because the cache still holds the version the
// controller's own status write replaced is reported to a Metrics hook
// that has a SyncSkipped method (ctrlkit_syncs_skipped_total in
// package kube), as the Deployment controller reports its own.
func TestControllerReportsSkippedSyncs(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	for _, name := range []string{"a", "b"} {
		w.addPod(newPod(name, ownedBy(rs)))
	}
	// The test delivers the ReplicaSet events itself, so it decides when
	// the event of a write arrives. Pod events flow from the world.
	rsw := fakewatch.New(w.clock, "ReplicaSet watch")
	done, skipped := queuetest.NewCounter(), new(atomic.Int64)
	r := startControllerWith(t, w, controllerOpts{
		rss: informer.ListWatchFuncs[*appsv1.ReplicaSet]{
			ListFunc:  w.rsSource().List,
			WatchFunc: func(context.Context, string) (watch.Interface, error) { return rsw, nil },
		},
		metrics: skipHook{done, skipped},
	})
	check := func(step string, syncs int, skips int64) {
		t.Helper()
		r.settle(t)
		if got := done.Count(); got != syncs {
			t.Fatalf("%s: %d keys processed; want %d", step, got, syncs)
		}
		if got := skipped.Load(); got != skips {
			t.Errorf("%s: %d syncs reported skipped; want %d", step, got, skips)
		}
	}

	// The first sync writes the status; its event is held back.
	check("first sync", 1, 0)
	// Pod a turns ready, and its event enqueues the ReplicaSet before the
	// status write's event arrives: the sync is skipped, and counted.
	w.updatePod(key("a"), readySince(t0))
	check("pod event ahead of the status write's event", 2, 1)
	// The status write's event arrives: the sync runs.
	rsw.Modify(w.rs(key("web")))
	check("the status write's event", 3, 1)
}
