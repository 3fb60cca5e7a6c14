package workqueue_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeQueue(t *testing.T) (*workqueue.Queue[string], *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	q := workqueue.New(workqueue.Config[string]{Name: t.Name(), Clock: fc})
	t.Cleanup(q.ShutDown)
	return q, fc
}

// op is one step of a scripted test: "add x", "get" (Get and record the
// item), "done x", "len" (record Len).
type op struct {
	verb, item string
}

// run applies ops to q and returns what the "get" and "len" steps saw.
func run(t *testing.T, q *workqueue.Queue[string], ops []op) []string {
	t.Helper()
	var got []string
	for _, o := range ops {
		switch o.verb {
		case "add":
			q.Add(o.item)
		case "get":
			item, shutdown := q.Get()
			if shutdown {
				t.Fatalf("Get() reported shutdown at %v", o)
			}
			got = append(got, "get "+item)
		case "done":
			q.Done(o.item)
		case "len":
			got = append(got, fmt.Sprintf("len %d", q.Len()))
		default:
			t.Fatalf("unknown op %v", o)
		}
	}
	return got
}

// get hands out the next item, failing the test if none is ready: a
// delayed item is queued by the time the fake clock's Step returns, so a
// test never needs to wait for it.
func get(t *testing.T, q *workqueue.Queue[string]) string {
	t.Helper()
	if q.Len() == 0 {
		t.Fatal("Get() would block: no item is ready")
	}
	item, shutdown := q.Get()
	if shutdown {
		t.Fatal("Get() reported shutdown")
	}
	return item
}

func adds(items ...string) []op {
	ops := make([]op, len(items))
	for i, it := range items {
		ops[i] = op{"add", it}
	}
	return ops
}

func TestQueueSemantics(t *testing.T) {
	tests := []struct {
		name   string
		ops    []op
		want   []string
		reason string
	}{{
		name:   "fifo of first add",
		ops:    append(adds("a", "b", "c", "a", "b"), op{verb: "len"}, op{verb: "get"}, op{verb: "get"}, op{verb: "get"}, op{verb: "len"}),
		want:   []string{"len 3", "get a", "get b", "get c", "len 0"},
		reason: "re-adding a waiting item neither duplicates nor moves it",
	}, {
		name: "re-add while processing",
		ops: []op{
			{"add", "a"}, {"add", "b"}, {verb: "get"}, {"add", "a"}, {"add", "a"}, {verb: "len"},
			{verb: "get"}, {verb: "len"}, {"done", "a"}, {verb: "len"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "len 1", "get b", "len 0", "len 1", "get a", "len 0"},
		reason: "an item added while processing is held back until Done, then queued once",
	}, {
		name: "re-add goes to the back",
		ops: []op{
			{"add", "a"}, {verb: "get"}, {"add", "a"}, {"add", "b"}, {"done", "a"}, {verb: "get"}, {verb: "get"},
		},
		want:   []string{"get a", "get b", "get a"},
		reason: "a requeued item joins the queue at Done, behind items added meanwhile",
	}, {
		name:   "done of unknown or finished items is ignored",
		ops:    []op{{"done", "x"}, {"add", "a"}, {"done", "a"}, {verb: "get"}, {"done", "a"}, {"done", "a"}, {verb: "len"}, {"add", "a"}, {verb: "get"}},
		want:   []string{"get a", "len 0", "get a"},
		reason: "Done of an item that is waiting must not hand it to a second worker",
	}, {
		name: "done out of order, zero key",
		ops: []op{
			{"add", ""}, {"add", "b"}, {verb: "get"}, {verb: "get"}, {"add", ""}, {"add", "b"},
			{"done", ""}, {verb: "len"}, {"done", "b"}, {verb: "len"}, {verb: "get"}, {verb: "get"},
		},
		want:   []string{"get ", "get b", "len 1", "len 2", "get ", "get b"},
		reason: "Done finds any in-flight item, not only the one handed out last",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := newFakeQueue(t)
			got := run(t, q, tc.ops)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmismatch (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestZeroQueueIsUsable(t *testing.T) {
	var q workqueue.Queue[string]
	q.Done("never added")
	q.Add("a")
	if got, shutdown := q.Get(); got != "a" || shutdown {
		t.Fatalf("Get() = %q, %v; want \"a\", false", got, shutdown)
	}
	q.Done("a")
	// The zero queue's rate limiter delays "b" on the real clock; Get waits
	// for it (an event, not a duration), so that the drain below never
	// depends on whether the delay has fired yet.
	q.AddRateLimited("b")
	if got, shutdown := q.Get(); got != "b" || shutdown {
		t.Fatalf("Get() = %q, %v; want \"b\", false", got, shutdown)
	}
	q.Forget("b")
	q.Done("b")
	if err := q.ShutDownWithDrain(nil); err != nil {
		t.Fatalf("ShutDownWithDrain(nil) = %v; want nil", err)
	}
}

// TestConcurrentWorkers runs 8 producers and 8 consumers and checks the
// two promises that matter under contention: a key is never held by two
// workers at once, and no add is lost: an add made after the last Get of
// its key started is followed by another Get. With few keys most adds
// coalesce; with many, idle entries are also dropped and recycled.
func TestConcurrentWorkers(t *testing.T) {
	for _, keys := range []int{16, 3000} {
		t.Run(fmt.Sprintf("keys=%d", keys), func(t *testing.T) { concurrentWorkers(t, keys) })
	}
}

func concurrentWorkers(t *testing.T, keys int) {
	const producers, consumers, addsPerProducer = 8, 8, 2000
	q := workqueue.New(workqueue.Config[int]{})

	var (
		held = make([]atomic.Int32, keys) // 1 while a worker holds the key
		gen  = make([]atomic.Int64, keys) // bumped before every Add
		seen = make([]atomic.Int64, keys) // highest gen a worker saw after Get
		gets atomic.Int64
	)
	var workers sync.WaitGroup
	for range consumers {
		workers.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				gets.Add(1)
				if !held[k].CompareAndSwap(0, 1) {
					t.Errorf("key %d handed to a second worker while held", k)
				}
				g := gen[k].Load()
				for s := seen[k].Load(); g > s && !seen[k].CompareAndSwap(s, g); s = seen[k].Load() {
				}
				for range 3 {
					runtime.Gosched() // let others try to take the key meanwhile
				}
				held[k].Store(0)
				q.Done(k)
			}
		})
	}
	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			add := func(k int) {
				gen[k].Add(1)
				q.Add(k)
				runtime.Gosched() // interleave with the workers
			}
			for i := range addsPerProducer {
				add((i*7 + p*31) % keys)
			}
			// Finally every producer adds every key, so that the last add
			// of each key is likely to race with a worker holding it.
			for i := range keys {
				add((i + p*keys/producers) % keys)
			}
		})
	}
	producing.Wait()
	// A queue that loses track of its items hangs here until go test's
	// -timeout ends the run with every goroutine's stack: no wall-clock
	// watchdog, which a saturated machine could trip.
	if err := q.ShutDownWithDrain(t.Context()); err != nil {
		t.Fatalf("ShutDownWithDrain() = %v", err)
	}
	workers.Wait()
	for k := range keys {
		if s, g := seen[k].Load(), gen[k].Load(); s != g {
			t.Errorf("key %d: last Get saw add #%d of %d; an add was lost", k, s, g)
		}
	}
	if n, most := gets.Load(), int64(producers*(addsPerProducer+keys)); n < int64(keys) || n > most {
		t.Errorf("gets = %d; want between %d and %d", n, keys, most)
	}
}

func TestShutDown(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	q.Add("b")
	q.ShutDown()
	q.ShutDown() // harmless
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown() = false after ShutDown")
	}
	q.Add("c")
	q.AddAfter("d", time.Second)
	q.AddRateLimited("e")
	if got := q.Len(); got != 2 {
		t.Errorf("Len() after adds to a shut-down queue = %d; want 2 (adds are dropped)", got)
	}
	var got []string
	for {
		item, shutdown := q.Get()
		if shutdown {
			break
		}
		got = append(got, item)
		q.Done(item)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("Get() after ShutDown mismatch (-want +got):\n%s", diff)
	}
	if n := q.NumRequeues("e"); n != 0 {
		t.Errorf("NumRequeues(e) = %d; want 0: the limiter is not consulted after shutdown", n)
	}
}

// TestShutDownRequeuesInFlightAdds: an item re-added while in flight
// before ShutDown is still processed, and workers are not told to stop
// while it is pending.
func TestShutDownRequeuesInFlightAdds(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	item, _ := q.Get()
	q.Add("a") // dirty: to be queued again at Done
	q.ShutDown()

	type result struct {
		item     string
		shutdown bool
	}
	res := make(chan result, 1)
	go func() {
		item, shutdown := q.Get()
		res <- result{item, shutdown}
	}()
	for range 1000 {
		select {
		case r := <-res:
			t.Fatalf("Get() = %q, %v before the in-flight item was Done; want it to wait", r.item, r.shutdown)
		default:
			runtime.Gosched()
		}
	}
	q.Done(item)
	if r := <-res; r != (result{"a", false}) {
		t.Fatalf("Get() = %q, %v; want \"a\", false", r.item, r.shutdown)
	}
	q.Done("a")
	if _, shutdown := q.Get(); !shutdown {
		t.Error("Get() on a drained, shut-down queue did not report shutdown")
	}
}

func TestShutDownWithDrain(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		inFlight []string // got and not Done
		queued   []string
	}{
		{name: "empty"},
		{name: "queued only", queued: []string{"a", "b"}},
		{name: "in flight only", inFlight: []string{"a"}},
		{name: "both", inFlight: []string{"a", "b"}, queued: []string{"c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := newFakeQueue(t)
			for _, it := range tc.inFlight {
				q.Add(it)
				q.Get()
			}
			for _, it := range tc.queued {
				q.Add(it)
			}
			// With a context that has already ended, drain reports
			// whether the queue is drained right now.
			for len(tc.inFlight)+len(tc.queued) > 0 {
				err := q.ShutDownWithDrain(cancelled)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("ShutDownWithDrain() with %d in flight and %d queued = %v; want context.Canceled",
						len(tc.inFlight), len(tc.queued), err)
				}
				if len(tc.inFlight) > 0 {
					q.Done(tc.inFlight[0])
					tc.inFlight = tc.inFlight[1:]
				} else {
					item, _ := q.Get()
					tc.inFlight = append(tc.inFlight, item)
					tc.queued = tc.queued[1:]
				}
			}
			if err := q.ShutDownWithDrain(cancelled); err != nil {
				t.Fatalf("ShutDownWithDrain() of a drained queue = %v; want nil", err)
			}
		})
	}
}

func TestShutDownWithDrainWaitsForWorkers(t *testing.T) {
	q, _ := newFakeQueue(t)
	const n = 100
	for i := range n {
		q.Add(fmt.Sprint(i))
	}
	var processed atomic.Int64
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				processed.Add(1)
				q.Done(item)
			}
		})
	}
	if err := q.ShutDownWithDrain(context.Background()); err != nil {
		t.Fatalf("ShutDownWithDrain() = %v", err)
	}
	if got := processed.Load(); got != n {
		t.Errorf("processed %d items when drain returned; want %d", got, n)
	}
	workers.Wait()
}

func TestShutDownWithDrainDeadline(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("stuck")
	q.Get() // never Done
	ctx, cancel := context.WithDeadline(context.Background(), t0)
	defer cancel()
	err := q.ShutDownWithDrain(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ShutDownWithDrain() = %v; want context.DeadlineExceeded", err)
	}
	if want := fmt.Sprintf("workqueue %q: drain: context deadline exceeded", t.Name()); err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
}
