package clock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// A fake clock fires timers only when a test moves time on.
func ExampleFake() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	t := fc.NewTimer(90 * time.Second)
	fc.Step(time.Minute)
	fmt.Println("pending after 1m:", fc.Waiters())
	fc.Step(time.Minute)
	fmt.Println("fired after", (<-t.C()).Sub(start))
	// Output:
	// pending after 1m: 1
	// fired after 2m0s
}

// A goroutine that gets work from another one tells the clock about it
// with a Source, and virtual time waits for that work: here a worker that
// reports each job and schedules the next one a minute later.
func ExampleFake_RunUntil() {
	fc := clock.NewDeterministic(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := clock.NewSource(fc, "worker")
	jobs := make(chan int, 10)
	done := make(chan clock.Work, 10)
	// hand gives the worker job n, tracked from now until the worker's Done.
	hand := func(n int) {
		w, now := src.Start(func() { jobs <- n })
		done <- w
		if now {
			jobs <- n
		}
	}
	finished := 0
	go func() {
		for n := range jobs {
			fmt.Printf("job %d at %s\n", n, fc.Now().Format("15:04"))
			if n < 3 {
				fc.AfterFunc(time.Minute, func() { hand(n + 1) })
			} else {
				finished = n
			}
			(<-done).Done() // last: the next job's timer is set
		}
	}()
	hand(1)
	err := fc.RunUntil(context.Background(), func() bool { return finished == 3 }, time.Hour)
	fmt.Println("err:", err)
	// Output:
	// job 1 at 00:00
	// job 2 at 00:01
	// job 3 at 00:02
	// err: <nil>
}
