package clock_test

import (
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
