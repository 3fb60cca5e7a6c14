// Package starve starves a test of CPU: it lets tests check that a
// simulation's outcome does not depend on how busy the machine is.
package starve

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// CPU runs the rest of the test with GOMAXPROCS 1 and n goroutines that
// burn CPU without pause, until the test ends. The code under test then gets
// a fraction of one processor, in slices the scheduler hands out
// preemptively, the harshest schedule a busy machine gives it. The test
// must not run in parallel with others: GOMAXPROCS is process-wide.
func CPU(t testing.TB, n int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := uint64(1)
			for !stop.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			sink.Add(x)
		})
	}
	t.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
		runtime.GOMAXPROCS(prev)
	})
}

var sink atomic.Uint64 // keeps the burners' work from being optimised away
