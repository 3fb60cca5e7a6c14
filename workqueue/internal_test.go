package workqueue

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// The tests in this file read unexported state that is invisible from
// outside by design; everything else is tested through the API.

// TestQueueMemoryIsBounded checks the queue's own bookkeeping: after many
// distinct items have been processed, failed and succeeded, the queue keeps
// at most its cache of idle entries. The limiter's side is tested from
// outside in TestFailureMapDoesNotGrow.
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

// TestQuickLookupFollowsQueued checks the lock-free table used by contended
// Adds: it must say "queued" exactly while the item waits for Get, or a
// contended Add would be lost.
func TestQuickLookupFollowsQueued(t *testing.T) {
	q := New(Config[string]{})
	defer q.ShutDown()
	quick := func() bool { return q.quick.coalesced("a") }

	q.Add("a")
	q.mu.Lock()
	q.quick.publish(q.items["a"]) // as a contended Add would
	q.mu.Unlock()
	if !quick() {
		t.Fatal("queued item: coalesced = false; want true")
	}
	q.Get()
	if quick() {
		t.Fatal("item being processed: coalesced = true; want false")
	}
	q.Add("a") // due again at Done, but not queued yet
	if quick() {
		t.Fatal("item re-added while processing: coalesced = true; want false")
	}
	q.Done("a")
	if !quick() {
		t.Fatal("item queued again at Done: coalesced = false; want true")
	}
	q.Get()
	q.Done("a")
	if quick() {
		t.Fatal("idle item: coalesced = true; want false")
	}
	if q.quick.coalesced("b") {
		t.Fatal("unknown item: coalesced = true; want false")
	}
}

// TestGetServesBatchedRequestsInTheInbox checks the one case in which a
// batched request is served by a Get rather than by an add: the request
// is still in the inbox, not merged, when a Get hands the item out. The
// run starts after the request was made, so the request is dropped when
// merged; a request made after the Get still waits.
func TestGetServesBatchedRequestsInTheInbox(t *testing.T) {
	q := New(Config[string]{})
	defer q.ShutDown()
	got := make(chan string)
	go func() {
		item, _ := q.Get()
		got <- item
	}()
	for { // wait for the Get to block
		q.mu.Lock()
		waiting := q.track.waiting
		q.mu.Unlock()
		if waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	q.mu.Lock()
	q.pushReady(q.entryFor("a")) // the waiting Get takes a when mu is free
	q.AddBatched("a", time.Hour) // before that: it waits in the inbox
	if q.delay.n != 1 {
		t.Fatalf("%d requests in the inbox; want 1", q.delay.n)
	}
	q.mu.Unlock()
	if item := <-got; item != "a" {
		t.Fatalf("Get() = %q; want a", item)
	}
	q.Done("a")
	batched := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.mergeInbox()
		e := q.items["a"]
		return e != nil && e.state&batched != 0
	}
	if batched() {
		t.Errorf("the request made before the Get still waits after the run; want it served")
	}
	q.AddBatched("a", time.Hour)
	if !batched() {
		t.Errorf("the request made after the run was dropped; want it waiting")
	}
}
