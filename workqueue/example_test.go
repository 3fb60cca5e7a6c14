package workqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// A worker loop: Get, process, Forget on success or AddRateLimited on
// failure, then Done. Keys added several times before a worker gets them
// are processed once.
func Example() {
	q := workqueue.New(workqueue.Config[types.NamespacedName]{Name: "replicaset"})
	for _, name := range []string{"web", "db", "web", "cache", "db"} {
		q.Add(types.NamespacedName{Namespace: "default", Name: name})
	}

	var wg sync.WaitGroup
	wg.Go(func() { // one worker, so that the output is in queue order
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			fmt.Println("reconcile", key)
			q.Forget(key) // success: reset its backoff
			q.Done(key)
		}
	})

	// Wait until everything queued is processed, then stop the worker.
	if err := q.ShutDownWithDrain(context.Background()); err != nil {
		fmt.Println(err)
	}
	wg.Wait()
	// Output:
	// reconcile default/web
	// reconcile default/db
	// reconcile default/cache
}

// AddAfter schedules an item on the queue's clock. With a fake clock a
// test moves time by hand and never sleeps.
func ExampleQueue_AddAfter() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	q := workqueue.New(workqueue.Config[string]{Clock: fc})
	defer q.ShutDown()

	q.AddAfter("resync", time.Minute)
	q.AddAfter("resync", time.Hour) // a later due time cannot postpone it
	fmt.Println("queued now:", q.Len())

	fc.Step(time.Minute)
	item, _ := q.Get()
	fmt.Printf("got %s after %v\n", item, fc.Since(start))
	q.Done(item)
	// Output:
	// queued now: 0
	// got resync after 1m0s
}

// A failing item is retried with exponential backoff until Forget resets
// it. The example uses a fake clock and jumps to each retry.
func ExampleQueue_AddRateLimited() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	q := workqueue.New(workqueue.Config[string]{
		Clock:       fc,
		RateLimiter: workqueue.NewExponentialBackoff[string](time.Second, time.Minute),
	})
	defer q.ShutDown()

	errFlaky := errors.New("flaky")
	reconcile := func(attempt int) error {
		if attempt < 4 {
			return errFlaky
		}
		return nil
	}

	q.Add("web")
	for attempt := 1; ; attempt++ {
		key, _ := q.Get()
		err := reconcile(attempt)
		fmt.Printf("t=%v attempt %d: %v\n", fc.Since(start), attempt, err)
		if err != nil {
			q.AddRateLimited(key)
			q.Done(key)
			next, _ := fc.NextDeadline() // when the retry is due
			fc.SetTime(next)
			continue
		}
		q.Forget(key)
		q.Done(key)
		fmt.Println("requeues after success:", q.NumRequeues(key))
		break
	}
	// Output:
	// t=0s attempt 1: flaky
	// t=1s attempt 2: flaky
	// t=3s attempt 3: flaky
	// t=7s attempt 4: <nil>
	// requeues after success: 0
}

// The delays of an exponential backoff double from the base up to the cap.
func ExampleExponentialBackoff() {
	l := workqueue.NewExponentialBackoff[string](time.Second, 10*time.Second)
	var delays []time.Duration
	for range 5 {
		delays = append(delays, l.When("web"))
	}
	fmt.Println(delays)
	l.Forget("web")
	fmt.Println(l.When("web"))
	// Output:
	// [1s 2s 4s 8s 10s]
	// 1s
}
