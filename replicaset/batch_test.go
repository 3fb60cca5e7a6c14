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
// delay, once merged into the queue; the controller makes no rate-limited
// adds while no sync fails).
type delayCounter struct {
	*queuetest.Counter
	delayed atomic.Int32
}

func (d *delayCounter) Retried() { d.delayed.Add(1) }

// quiet is how long a test watches for a sync that must not happen. Only
// a bug makes anything happen in it: the passing path never depends on it.
const quiet = 100 * time.Millisecond

// batchWorld is a settled world with a controller running over it: the
// ReplicaSet web (3 replicas) and its pods a, b, c, running and not ready,
// with a status that already counts them, so that the controller's first
// sync writes nothing.
type batchWorld struct {
	w     *world
	m     *delayCounter
	delay int32 // delayed adds taken in before the test's own events
}

// startBatched starts the controller with BatchPeriod period over a fresh
// batchWorld and waits until it has settled: the first sync is done and
// the delayed adds of the startup pod events (if the ReplicaSet was cached
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
	startControllerWith(t, w, controllerOpts{metrics: m, batch: period})
	// The handlers have seen the initial lists before the first Get, so
	// every startup event is served by the first sync.
	m.WaitFor(t, 1)
	waitUntil(t, "no delay armed", func() bool { return w.clock.Waiters() == 0 })
	if creates, statuses := w.writes(); creates != 0 || statuses != 0 {
		t.Fatalf("first sync: %d pods created, %d status writes; want none (fixture status out of date?)", creates, statuses)
	}
	if n := m.Count(); n != 1 {
		t.Fatalf("%d syncs at startup; want 1", n)
	}
	return &batchWorld{w: w, m: m, delay: m.delayed.Load()}
}

// delayed returns the number of delayed adds since startup.
func (b *batchWorld) delayed() int { return int(b.m.delayed.Load() - b.delay) }

// waitSyncOrDelay waits until more than syncs syncs have finished or at
// least delays delayed adds have been taken in, whichever comes first, so
// that a sync that should have been delayed (or the reverse) fails the
// test at once instead of after a timeout.
func (b *batchWorld) waitSyncOrDelay(t *testing.T, syncs, delays int) {
	t.Helper()
	waitUntil(t, "a sync or a delayed add", func() bool { return b.m.Count() > syncs || b.delayed() >= delays })
}

// check fails the test unless exactly syncs syncs have finished, delays
// delayed adds have been taken in and statuses status writes been made.
func (b *batchWorld) check(t *testing.T, step string, syncs, delays, statuses int) {
	t.Helper()
	_, gotStatuses := b.w.writes()
	if gotSyncs, gotDelays := b.m.Count(), b.delayed(); gotSyncs != syncs || gotDelays != delays || gotStatuses != statuses {
		t.Fatalf("%s: %d syncs, %d delayed adds, %d status writes; want %d, %d, %d",
			step, gotSyncs, gotDelays, gotStatuses, syncs, delays, statuses)
	}
}

// stayQuiet watches for quiet and fails the test as soon as a sync
// finishes or a status is written beyond syncs and statuses.
func (b *batchWorld) stayQuiet(t *testing.T, step string, syncs, delays, statuses int) {
	t.Helper()
	for end := time.Now().Add(quiet); time.Now().Before(end); {
		b.check(t, step, syncs, delays, statuses)
		time.Sleep(time.Millisecond) // poll interval, not synchronisation
	}
	b.check(t, step, syncs, delays, statuses)
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
		b.waitSyncOrDelay(t, 1, 3)
		b.check(t, "three pods ready, clock not stepped", 1, 3, 0)
		if n := b.w.clock.Waiters(); n != 1 {
			t.Fatalf("%d timers armed on the clock; want 1 (the batch delay)", n)
		}
		b.w.clock.Step(period - time.Millisecond)
		b.stayQuiet(t, "clock stepped short of the period", 1, 3, 0)

		// The period ends: one sync writes all three ready pods at once.
		// The status write's own event syncs once more and writes nothing.
		b.w.clock.Step(time.Millisecond)
		b.m.WaitFor(t, 3)
		b.w.clock.Step(period)
		b.stayQuiet(t, "period over", 3, 3, 1)
		b.wantStatus(t, "period over", status(3, 1))
	})

	t.Run("ReplicaSet events do not wait", func(t *testing.T) {
		b := startBatched(t, period)
		// Pod a turns ready: its sync waits for the period.
		b.w.updatePod(key("a"), readySince(t0))
		b.waitSyncOrDelay(t, 1, 1)
		b.check(t, "pod a ready", 1, 1, 0)
		if n := b.w.clock.Waiters(); n != 1 {
			t.Fatalf("%d timers armed on the clock; want 1 (the batch delay)", n)
		}

		// A spec change (generation 2) syncs at once, without the clock,
		// and that sync also counts pod a.
		rs := b.w.rs(key("web")).DeepCopy()
		rs.Generation = 2
		rs.Spec.Template.Annotations = map[string]string{"rev": "2"}
		b.w.addRS(rs)
		b.waitSyncOrDelay(t, 1, 2)
		if got := b.delayed(); got != 1 {
			t.Fatalf("%d delayed adds after the spec change; want 1 (pod a's)", got)
		}
		// The status write's event syncs once more and writes nothing.
		b.m.WaitFor(t, 3)
		b.check(t, "spec change", 3, 1, 1)
		b.wantStatus(t, "spec change", status(1, 2))

		// The Add of the spec change took web out of the delay: when the
		// period ends, web does not sync a second time for pod a.
		b.w.clock.Step(period)
		b.stayQuiet(t, "period over after the spec change", 3, 1, 1)
		b.wantStatus(t, "period over after the spec change", status(1, 2))
	})

	t.Run("zero period", func(t *testing.T) {
		b := startBatched(t, 0)
		b.w.updatePod(key("a"), readySince(t0))
		b.waitSyncOrDelay(t, 1, 1)
		if got := b.delayed(); got != 0 {
			t.Fatalf("%d delayed adds for pod a; want 0", got)
		}
		// One sync for pod a, one for the event of its status write.
		b.m.WaitFor(t, 3)
		b.check(t, "pod a ready", 3, 0, 1)
		b.wantStatus(t, "pod a ready", status(1, 1))
	})
}
