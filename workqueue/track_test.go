package workqueue_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// On a fake clock a served queue's items are tracked work from Add to
// Done, so that virtual time waits for them; before it is served, they
// are not (no worker would take them).
func TestServedItemsAreTrackedWork(t *testing.T) {
	fc := clock.NewFake(t0)
	q := workqueue.New(workqueue.Config[string]{Name: "q", Clock: fc})
	defer q.ShutDown()
	q.Add("a")
	if b := fc.Busy(); b != "" {
		t.Errorf("Busy() with an item in a queue not served = %q; want \"\"", b)
	}
	q.Serve()
	if b := fc.Busy(); !strings.Contains(b, `workqueue "q" ×1`) {
		t.Errorf("Busy() once served = %q; want the item counted", b)
	}
	item, _ := q.Get()
	q.Add("a") // while processing: queued again at Done, still one unit
	q.AddAfter("b", time.Second)
	if b := fc.Busy(); !strings.Contains(b, `workqueue "q" ×1`) {
		t.Errorf("Busy() while processing = %q; want one unit", b)
	}
	q.Done(item)
	item, _ = q.Get()
	q.Done(item)
	if b := fc.Busy(); b != "" {
		t.Errorf("Busy() after Done = %q; want \"\" (b waits for its delay: a timer, not work)", b)
	}
	fc.Step(time.Second) // the timer's callback queues b before Step returns
	if b := fc.Busy(); !strings.Contains(b, `workqueue "q" ×1`) {
		t.Errorf("Busy() when b is due = %q; want it counted", b)
	}
	if item, _ := q.Get(); item != "b" {
		t.Errorf("Get() = %q; want b", item)
	}
	q.Done("b")
}

// On a deterministic clock the workers get the items one at a time, in
// their turns, in the order they were added.
func TestDeterministicQueueTakesTurns(t *testing.T) {
	fc := clock.NewDeterministic(t0)
	q := workqueue.New(workqueue.Config[string]{Name: "q", Clock: fc})
	q.Serve()
	for _, item := range []string{"a", "b", "c"} {
		q.Add(item)
	}
	var mu sync.Mutex
	var got []string
	inFlight, maxInFlight := 0, 0
	var wg sync.WaitGroup
	for range 3 { // three workers; still one item at a time
		wg.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				inFlight++
				maxInFlight = max(maxInFlight, inFlight)
				got = append(got, item)
				inFlight--
				mu.Unlock()
				q.Done(item)
			}
		})
	}
	if err := fc.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.ShutDown()
	wg.Wait()
	if strings.Join(got, ",") != "a,b,c" || maxInFlight != 1 {
		t.Errorf("workers got %v with up to %d in flight; want a,b,c one at a time", got, maxInFlight)
	}
}

// A regression test: AddAfter right after the delay timer fired must set a
// timer before it returns. The delay goroutine of earlier versions could
// still hold the fired timer, so that AddAfter set none and a test that
// stepped the clock at once found nothing to step to (1 run in 300 under
// -race).
func TestAddAfterFollowingAFiredTimer(t *testing.T) {
	q, fc := newFakeQueue(t)
	for i := range 1000 {
		q.AddAfter("a", time.Second)
		d, ok := fc.NextDeadline()
		if !ok {
			t.Fatalf("iteration %d: no timer pending right after AddAfter", i)
		}
		fc.SetTime(d)
		if item := get(t, q); item != "a" {
			t.Fatalf("iteration %d: Get() = %q", i, item)
		}
		q.Done("a")
	}
}
