package workqueue

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// TestQueueMemoryIsBounded checks the queue's own bookkeeping, which is
// invisible from outside: after many distinct items have been processed,
// failed and succeeded, the queue keeps at most its cache of idle entries.
// This is the one test that reads unexported fields; the limiter's side is
// tested from outside in TestFailureMapDoesNotGrow.
func TestQueueMemoryIsBounded(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := New(Config[string]{Clock: fc})
	defer q.ShutDown()
	const n = 3 * maxIdle
	for i := range n {
		item := fmt.Sprint("obj-", i)
		q.Add(item)
		got, _ := q.Get()
		q.AddRateLimited(got) // fails once
		q.Done(got)
		d, _ := fc.NextDeadline()
		fc.SetTime(d)
		got, _ = q.Get()
		q.Done(got) // then succeeds, without Forget
		fc.Step(time.Duration(forgetGrace))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if got := len(q.items); got > maxIdle+2 {
		t.Errorf("queue tracks %d items after %d came and went; want at most %d", got, n, maxIdle+2)
	}
	if got := q.forgets.len(); got > 2 {
		t.Errorf("%d items await forgetting; want at most 2", got)
	}
	if got := q.limiter.(*MaxOf[string]).limiters[0].NumRequeues("obj-0"); got != 0 {
		t.Errorf("NumRequeues(obj-0) = %d; want 0", got)
	}
}
