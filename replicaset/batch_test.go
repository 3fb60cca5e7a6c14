package replicaset_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/internal/queuetest"
)

// delayCounter is a queuetest.Counter that also counts the delayed adds the
// queue takes in (workqueue.Metrics.Retried: every AddAfter with a positive
// delay, during the call; the controller makes no rate-limited adds while
// no sync fails).
type delayCounter struct {
	*queuetest.Counter
	delayed atomic.Int32
}

func (d *delayCounter) Retried() { d.delayed.Add(1) }

// batchWorld is a settled world with a controller running over it: the
// ReplicaSet web (3 replicas) and its pods a, b, c, running and not ready,
// with a status that already counts them, so that the controller's first
// sync writes nothing.
type batchWorld struct {
	w     *world
	r     *running
	m     *delayCounter
	delay int32 // delayed adds taken in before the test's own events
}

// startBatched starts the controller with BatchPeriod period over a fresh
// batchWorld and lets the clock settle: the first sync is done and the
// delayed adds of the startup pod events (if the ReplicaSet was cached
// before them; that sync served them) are gone.
func startBatched(t *testing.T, period time.Duration) *batchWorld {
	t.Helper()
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 3, func(rs *appsv1.ReplicaSet) {
		rs.Status.Replicas, rs.Status.FullyLabeledReplicas = 3, 3
	}))
	for _, name := range []string{"a", "b", "c"} {
		w.addPod(newPod(name, ownedBy(rs)))
	}
	m := &delayCounter{Counter: queuetest.NewCounter()}
	r := startControllerWith(t, w, controllerOpts{metrics: m, batch: period})
	// The handlers have seen the initial lists before the first Get, so
	// every startup event is served by the first sync.
	r.settle(t)
	if creates, statuses := w.writes(); creates != 0 || statuses != 0 {
		t.Fatalf("first sync: %d pods created, %d status writes; want none (fixture status out of date?)", creates, statuses)
	}
	if n := m.Count(); n != 1 {
		t.Fatalf("%d syncs at startup; want 1", n)
	}
	if n := w.clock.Waiters(); n != 0 {
		t.Fatalf("%d timers armed at startup; want none", n)
	}
	return &batchWorld{w: w, r: r, m: m, delay: m.delayed.Load()}
}

// delayed returns the number of delayed adds since startup.
func (b *batchWorld) delayed() int { return int(b.m.delayed.Load() - b.delay) }

// check lets the clock settle, then fails the test unless exactly syncs
// syncs have finished, delays delayed adds have been taken in, statuses
// status writes been made and timers timers are armed on the clock (the
// batch delay). Once the clock has settled, nothing more can happen until
// it moves: a sync that should wait for the period, or one too many, is
// caught here, at once.
func (b *batchWorld) check(t *testing.T, step string, syncs, delays, statuses, timers int) {
	t.Helper()
	b.r.settle(t)
	_, gotStatuses := b.w.writes()
	if gotSyncs, gotDelays := b.m.Count(), b.delayed(); gotSyncs != syncs || gotDelays != delays || gotStatuses != statuses {
		t.Fatalf("%s: %d syncs, %d delayed adds, %d status writes; want %d, %d, %d",
			step, gotSyncs, gotDelays, gotStatuses, syncs, delays, statuses)
	}
	if n := b.w.clock.Waiters(); n != timers {
		t.Fatalf("%s: %d timers armed on the clock; want %d", step, n, timers)
	}
}

// wantStatus fails the test unless web's status is want.
func (b *batchWorld) wantStatus(t *testing.T, step string, want appsv1.ReplicaSetStatus) {
	t.Helper()
	if diff := cmp.Diff(want, b.w.rs(key("web")).Status); diff != "" {
		t.Errorf("%s: status mismatch (-want +got):\n%s", step, diff)
	}
}

// With a batch period, pod events wait for it and a burst of them costs
// one sync and one status write; ReplicaSet events sync at once and serve
// the pod events waiting. A zero period syncs at once on pod events too.
func TestControllerBatchPeriod(t *testing.T) {
	const period = 50 * time.Millisecond
	status := func(ready int32, generation int64) appsv1.ReplicaSetStatus {
		return appsv1.ReplicaSetStatus{
			Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: ready, AvailableReplicas: ready,
			ObservedGeneration: generation, TerminatingReplicas: new(int32),
		}
	}

	t.Run("pod events wait for the period", func(t *testing.T) {
		b := startBatched(t, period)
		// The three pods turn ready: three delayed adds of web, one delay.
		for _, name := range []string{"a", "b", "c"} {
			b.w.updatePod(key(name), readySince(t0))
		}
		b.check(t, "three pods ready, clock not stepped", 1, 3, 0, 1)
		b.w.clock.Step(period - time.Millisecond)
		b.check(t, "clock stepped short of the period", 1, 3, 0, 1)

		// The period ends: one sync writes all three ready pods at once.
		// The status write's own event syncs once more and writes nothing.
		b.w.clock.Step(time.Millisecond)
		b.check(t, "period over", 3, 3, 1, 0)
		b.w.clock.Step(period)
		b.check(t, "a period later", 3, 3, 1, 0)
		b.wantStatus(t, "period over", status(3, 1))
	})

	t.Run("ReplicaSet events do not wait", func(t *testing.T) {
		b := startBatched(t, period)
		// Pod a turns ready: its sync waits for the period.
		b.w.updatePod(key("a"), readySince(t0))
		b.check(t, "pod a ready", 1, 1, 0, 1)

		// A spec change (generation 2) syncs at once, without the clock,
		// and that sync also counts pod a. The status write's event syncs
		// once more and writes nothing. The Add of the spec change took
		// web out of the delay, and the delay's timer went with it.
		rs := b.w.rs(key("web")).DeepCopy()
		rs.Generation = 2
		rs.Spec.Template.Annotations = map[string]string{"rev": "2"}
		b.w.addRS(rs)
		b.check(t, "spec change", 3, 1, 1, 0)
		b.wantStatus(t, "spec change", status(1, 2))

		// When the period ends, web does not sync a second time for pod a.
		b.w.clock.Step(period)
		b.check(t, "period over after the spec change", 3, 1, 1, 0)
		b.wantStatus(t, "period over after the spec change", status(1, 2))
	})

	t.Run("zero period", func(t *testing.T) {
		b := startBatched(t, 0)
		// One sync for pod a, at once, one for the event of its status
		// write; no delayed add.
		b.w.updatePod(key("a"), readySince(t0))
		b.check(t, "pod a ready", 3, 0, 1, 0)
		b.wantStatus(t, "pod a ready", status(1, 1))
	})
}
