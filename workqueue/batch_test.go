package workqueue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AddBatched is the stingy delayed add: any add of the item before it is
// due, or a Get after it was made, serves it. These cases are the ones in
// which it differs from AddAfter (compare TestAddAfter).

func TestAddBatched(t *testing.T) {
	runDelayCases(t, []delayCase{{
		name: "add serves a batched add",
		steps: []step{
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "add", item: "a"}, {verb: "len"},
			{verb: "get"}, {verb: "done", item: "a"},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want:   []string{"len 1", "get a", "get marker", "len 0"},
		reason: "Add makes a batched item due now and it runs once",
	}, {
		name: "batched add of a queued item is served",
		steps: []step{
			{verb: "add", item: "a"},
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want: []string{"get a", "get m1", "get m2", "len 0"},
	}, {
		name: "batched add of an item due again at Done is served",
		steps: []step{
			{verb: "add", item: "a"}, {verb: "get"}, {verb: "add", item: "a"},
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "done", item: "a"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get m1", "get a", "get m2", "len 0"},
		reason: "the batched add merged into the pending re-add: a runs once more, not twice",
	}, {
		name: "batched adds: one run, at the first's due time",
		steps: []step{
			{verb: "batch", item: "a", delay: time.Second},
			{verb: "batch", item: "a", delay: 3 * time.Second},
			{verb: "after", item: "marker", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "marker"},
			{verb: "after", item: "m2", delay: 2 * time.Second},
			{verb: "step", delay: 2 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want: []string{"get a", "get marker", "get m2", "len 0"},
	}, {
		name: "an add serves the batched add, not the timed one",
		steps: []step{
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "batch", item: "a", delay: 2 * time.Second},
			{verb: "add", item: "a"}, {verb: "get"}, {verb: "done", item: "a"},
			{verb: "after", item: "m1", delay: 2 * time.Second},
			{verb: "step", delay: 2 * time.Second},
			{verb: "get"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 3 * time.Second},
			{verb: "step", delay: 3 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get m1", "get a", "get m2", "len 0"},
		reason: "nothing at 2s (the batch was served), a again at 5s (its timed request)",
	}, {
		name: "a due batched add leaves a later timed one",
		steps: []step{
			{verb: "batch", item: "a", delay: time.Second},
			{verb: "after", item: "a", delay: 4 * time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 3 * time.Second},
			{verb: "step", delay: 3 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want: []string{"get a", "get m1", "get a", "get m2", "len 0"},
	}, {
		name: "a due timed add serves a later batched one",
		steps: []step{
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "a", delay: time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get m1", "get m2", "len 0"},
		reason: "the timed add at 1s is an add of a: nothing more at 5s",
	}, {
		name: "batched add while processing waits out its delay",
		steps: []step{
			{verb: "add", item: "a"}, {verb: "get"},
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "done", item: "a"}, {verb: "len"},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "len 0", "get a", "get marker", "len 0"},
		reason: "the run in progress began before the request: it does not serve it",
	}, {
		name: "add while processing serves a batched add",
		steps: []step{
			{verb: "add", item: "a"}, {verb: "get"},
			{verb: "batch", item: "a", delay: 5 * time.Second},
			{verb: "add", item: "a"}, {verb: "done", item: "a"},
			{verb: "get"}, {verb: "done", item: "a"},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get a", "get marker", "len 0"},
		reason: "the add queues a again at Done, which takes the batched request along",
	}, {
		name: "after a batched run, a new request waits again",
		steps: []step{
			{verb: "batch", item: "a", delay: time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "batch", item: "a", delay: time.Second},
			{verb: "after", item: "m2", delay: time.Second},
			{verb: "len"},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want: []string{"get a", "get m1", "len 0", "get a", "get m2", "len 0"},
	}, {
		name: "zero and negative batch delays add now",
		steps: []step{
			{verb: "batch", item: "a"}, {verb: "batch", item: "b", delay: -time.Second}, {verb: "len"},
		},
		want: []string{"len 2"},
	}})
}

// TestServedBatchStopsTimer checks that an Add serving the only delayed
// request leaves no timer behind, and that a timed request keeps its own.
func TestServedBatchStopsTimer(t *testing.T) {
	q, fc := newFakeQueue(t)
	q.AddBatched("a", 5*time.Second)
	if got := fc.Waiters(); got != 1 {
		t.Fatalf("fake clock waiters = %d after AddBatched; want 1", got)
	}
	q.Add("a")
	if got := fc.Waiters(); got != 0 {
		t.Errorf("fake clock waiters = %d after the batched add was served; want 0", got)
	}
	q.AddAfter("b", 5*time.Second)
	q.Add("b")
	if got := fc.Waiters(); got != 1 {
		t.Errorf("fake clock waiters = %d after Add of an item with a timed add; want 1 (it stays)", got)
	}
}

func TestShutDownDiscardsBatchedItems(t *testing.T) {
	q, fc := newFakeQueue(t)
	q.AddBatched("a", time.Second)
	q.ShutDown()
	q.AddBatched("b", time.Second)
	fc.Step(time.Hour)
	if item, shutdown := q.Get(); !shutdown {
		t.Errorf("Get() = %q; want shutdown: batched items are discarded", item)
	}
}

// TestAddBatchedIsNeverLost runs producers (AddBatched and Add) and
// workers concurrently and checks that each item's last run started after
// its last request was made: a request is served by a run that starts
// after it, or leads to one. Tickets from one counter order the events.
func TestAddBatchedIsNeverLost(t *testing.T) {
	q, fc := newFakeQueue(t)
	const keys, producers, perProducer, workers = 8, 4, 500, 2
	var ticket atomic.Int64
	var mu sync.Mutex
	lastReq := map[string]int64{} // ticket taken before the item's last request
	lastRun := map[string]int64{} // ticket taken when Get last returned the item

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				tk := ticket.Add(1)
				mu.Lock()
				lastRun[item] = max(lastRun[item], tk)
				mu.Unlock()
				q.Done(item)
			}
		}()
	}
	var pw sync.WaitGroup
	for p := range producers {
		pw.Add(1)
		go func() {
			defer pw.Done()
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for range perProducer {
				k := fmt.Sprint("k", r.IntN(keys))
				mu.Lock()
				tk := ticket.Add(1)
				lastReq[k] = max(lastReq[k], tk)
				mu.Unlock()
				if r.IntN(4) == 0 {
					q.Add(k)
				} else {
					q.AddBatched(k, time.Duration(1+r.IntN(3))*time.Millisecond)
				}
			}
		}()
	}
	pw.Wait()
	fc.Step(time.Second) // every batched request is due: the timer's callback runs in Step
	if err := q.ShutDownWithDrain(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for k, req := range lastReq {
		if run := lastRun[k]; run < req {
			t.Errorf("%s: last run at ticket %d, before its last request (ticket %d): a request was lost", k, run, req)
		}
	}
}
