package workqueue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// recordingLimiter is an exponential backoff that also records which items
// it holds failures for, so tests can see its memory.
type recordingLimiter struct {
	inner *workqueue.ExponentialBackoff[string]

	mu      sync.Mutex
	held    map[string]bool
	forgets []string
}

var _ workqueue.RateLimiter[string] = (*recordingLimiter)(nil)

func newRecordingLimiter() *recordingLimiter {
	return &recordingLimiter{
		// A base well above the forgetting grace of 1s, so that the
		// tests' grace steps never make a retry due.
		inner: workqueue.NewExponentialBackoff[string](10*time.Second, time.Hour),
		held:  map[string]bool{},
	}
}

func (r *recordingLimiter) When(item string) time.Duration {
	r.mu.Lock()
	r.held[item] = true
	r.mu.Unlock()
	return r.inner.When(item)
}

func (r *recordingLimiter) Forget(item string) {
	r.mu.Lock()
	delete(r.held, item)
	r.forgets = append(r.forgets, item)
	r.mu.Unlock()
	r.inner.Forget(item)
}

func (r *recordingLimiter) NumRequeues(item string) int { return r.inner.NumRequeues(item) }

func (r *recordingLimiter) heldCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

func newLimitedQueue(t *testing.T) (*workqueue.Queue[string], *clock.Fake, *recordingLimiter) {
	t.Helper()
	fc := clock.NewFake(t0)
	rl := newRecordingLimiter()
	q := workqueue.New(workqueue.Config[string]{Clock: fc, RateLimiter: rl})
	t.Cleanup(q.ShutDown)
	return q, fc, rl
}

// stepToNext moves the fake clock to the next timer deadline, which must
// exist: AddAfter arms the delay timer before it returns.
func stepToNext(t *testing.T, fc *clock.Fake) {
	t.Helper()
	d, ok := fc.NextDeadline()
	if !ok {
		t.Fatal("no timer pending")
	}
	fc.SetTime(d)
}

func TestAddRateLimitedUsesLimiterDelay(t *testing.T) {
	q, fc, _ := newLimitedQueue(t)
	var waits []time.Duration
	retry := func() {
		start := fc.Now()
		q.AddRateLimited("a")
		stepToNext(t, fc)
		item, _ := q.Get()
		waits = append(waits, fc.Since(start))
		q.Done(item)
	}
	for range 2 {
		retry()
		retry()
		q.Forget("a")
	}
	// The limiter doubles from 10s; Forget starts it over.
	want := []time.Duration{10 * time.Second, 20 * time.Second, 10 * time.Second, 20 * time.Second}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaultLimiterUsesQueueClock(t *testing.T) {
	q, fc := newFakeQueue(t)
	q.AddRateLimited("a")
	d, ok := fc.NextDeadline()
	if !ok || d.Sub(t0) != 5*ms {
		t.Fatalf("timer at %v, %v; want 5ms after start on the fake clock", d.Sub(t0), ok)
	}
	fc.Step(5 * ms)
	if item, _ := q.Get(); item != "a" {
		t.Errorf("Get() = %q; want a", item)
	}
}

// TestFailureBookkeeping runs a worker that fails some attempts and checks
// how many failures the limiter remembers, for the orders in which workers
// call the queue.
func TestFailureBookkeeping(t *testing.T) {
	const grace = time.Second // documented on AddRateLimited
	type attempt struct {
		fail bool
		step time.Duration // clock step after the attempt
	}
	tests := []struct {
		name string
		// worker processes one attempt of item, in its own order of calls.
		worker   func(q *workqueue.Queue[string], item string, fail bool)
		attempts []attempt
		want     []int // NumRequeues after each attempt
	}{{
		name: "AddRateLimited before Done, Forget on success",
		worker: func(q *workqueue.Queue[string], item string, fail bool) {
			if fail {
				q.AddRateLimited(item)
			} else {
				q.Forget(item)
			}
			q.Done(item)
		},
		attempts: []attempt{{true, 0}, {true, 0}, {false, 0}, {true, 0}},
		want:     []int{1, 2, 0, 1},
	}, {
		name: "AddRateLimited after Done keeps backoff growing",
		worker: func(q *workqueue.Queue[string], item string, fail bool) {
			q.Done(item)
			if fail {
				q.AddRateLimited(item)
			}
		},
		// A grace period passes after each attempt: the failure reported
		// just after Done must cancel the forgetting that Done scheduled.
		attempts: []attempt{{true, grace}, {true, grace}, {true, grace}},
		want:     []int{1, 2, 3},
	}, {
		name: "success without Forget is forgotten after the grace",
		worker: func(q *workqueue.Queue[string], item string, fail bool) {
			if fail {
				q.AddRateLimited(item)
			}
			q.Done(item)
		},
		attempts: []attempt{{true, 0}, {true, 0}, {false, grace / 2}, {false, grace}},
		want:     []int{1, 2, 2, 0},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, fc, _ := newLimitedQueue(t)
			q.Add("a")
			var got []int
			for i, at := range tc.attempts {
				item, _ := q.Get()
				tc.worker(q, item, at.fail)
				fc.Step(at.step)
				// Another item passing through lets the queue settle
				// failures whose grace has passed.
				q.Add("other")
				if o, _ := q.Get(); o != "other" {
					t.Fatalf("attempt %d: Get() = %q; want other", i, o)
				}
				q.Done("other")
				got = append(got, q.NumRequeues("a"))
				if i < len(tc.attempts)-1 && q.Len() == 0 {
					if _, ok := fc.NextDeadline(); ok {
						stepToNext(t, fc) // bring the retry forward
					} else {
						q.Add("a")
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NumRequeues(a) after each attempt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailureMapDoesNotGrow processes many items that each fail once and
// then succeed without the worker ever calling Forget, as a worker whose
// objects are deleted would. The limiter must end up remembering nothing.
func TestFailureMapDoesNotGrow(t *testing.T) {
	q, fc, rl := newLimitedQueue(t)
	const n = 5000
	for i := range n {
		item := fmt.Sprint("obj-", i)
		q.AddRateLimited(item)
		stepToNext(t, fc)
		got, _ := q.Get()
		q.Done(got) // success; no Forget
		if held := rl.heldCount(); held > 2 {
			// Failures are forgotten one second after the success, and
			// each step here is ten seconds.
			t.Fatalf("after %d items the limiter holds %d items; want at most 2", i+1, held)
		}
	}
	fc.Step(time.Second)
	q.Add("last")
	q.Get()
	q.Done("last")
	if held := rl.heldCount(); held != 0 {
		t.Errorf("limiter holds %d items after all succeeded; want 0", held)
	}
}

// TestForgetDoesNotCancelRetry: Forget only resets the failure count.
func TestForgetDoesNotCancelRetry(t *testing.T) {
	q, fc, rl := newLimitedQueue(t)
	q.AddRateLimited("a")
	q.Forget("a")
	if n := q.NumRequeues("a"); n != 0 {
		t.Errorf("NumRequeues(a) after Forget = %d; want 0", n)
	}
	stepToNext(t, fc)
	if item, _ := q.Get(); item != "a" {
		t.Errorf("Get() = %q; want the pending retry of a", item)
	}
	if diff := cmp.Diff([]string{"a"}, rl.forgets); diff != "" {
		t.Errorf("limiter Forget calls mismatch (-want +got):\n%s", diff)
	}
}
