package workqueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// On a fake clock a queue's items are tracked work while a worker can take
// them (one waiting in Get, one announced by Serve, or one coming back after
// Done), from then until their Done.
func TestItemsAreTrackedWhileAWorkerCanTakeThem(t *testing.T) {
	fc := clock.NewFake(t0)
	q := workqueue.New(workqueue.Config[string]{Name: "q", Clock: fc})
	defer q.ShutDown()
	busy := func(step, want string) {
		t.Helper()
		if got := fc.Busy(); !strings.Contains(got, want) || want == "" && got != "" {
			t.Errorf("%s: Busy() = %q; want %q", step, got, want)
		}
	}
	q.Add("a")
	q.Add("b")
	busy("no worker yet", "")
	q.Serve(1)
	busy("one worker announced", `workqueue "q" ×1`)
	item, _ := q.Get()
	busy("a processing, b waiting for the worker", `workqueue "q" ×1`)
	q.Add(item) // while processing: queued again at Done
	q.Done(item)
	busy("b for the returning worker", `workqueue "q" ×1`)
	item, _ = q.Get()
	q.Done(item)
	item, _ = q.Get()
	q.AddAfter("c", time.Second)
	q.Done(item)
	busy("c waits for its delay: a timer, not work", "")
	fc.Step(time.Second) // the timer's callback queues c before Step returns
	busy("c due, the worker comes back", `workqueue "q" ×1`)
	if item, _ := q.Get(); item != "c" {
		t.Errorf("Get() = %q; want c", item)
	}
	q.Done("c")
}

// A regression test (soak seed 417): with every worker asleep in a request
// that takes virtual time (injected latency), an item queued meanwhile
// must not count as work, or virtual time could never move on to wake
// them.
func TestQueuedItemsDoNotBlockSleepingWorkers(t *testing.T) {
	for _, deterministic := range []bool{false, true} {
		t.Run(fmt.Sprint("deterministic=", deterministic), func(t *testing.T) {
			fc := clock.NewFake(t0)
			if deterministic {
				fc = clock.NewDeterministic(t0)
			}
			q := workqueue.New(workqueue.Config[string]{Name: "q", Clock: fc})
			q.Serve(1)
			q.Add("slow")
			var mu sync.Mutex
			var log []string
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					item, shutdown := q.Get()
					if shutdown {
						return
					}
					if item == "slow" {
						q.Add("next") // queued while the only worker sleeps
						if err := clock.Sleep(context.Background(), fc, time.Minute); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					log = append(log, fmt.Sprintf("%s done at +%v", item, fc.Since(t0)))
					mu.Unlock()
					q.Done(item)
				}
			})
			err := fc.RunUntil(context.Background(), func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(log) == 2
			}, time.Hour)
			q.ShutDown()
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(log, ", "), "slow done at +1m0s, next done at +1m0s"; got != want {
				t.Errorf("log = %q; want %q", got, want)
			}
		})
	}
}

// On a deterministic clock the workers get the items one at a time, in
// their turns, in the order they were added.
func TestDeterministicQueueTakesTurns(t *testing.T) {
	fc := clock.NewDeterministic(t0)
	q := workqueue.New(workqueue.Config[string]{Name: "q", Clock: fc})
	q.Serve(3)
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
