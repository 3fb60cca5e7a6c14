// Package queuetest helps tests wait for a work queue's workers without
// sleeping.
package queuetest

import (
	"sync"
	"testing"
	"time"
)

// Counter is a workqueue.Metrics that counts the items the queue's
// workers have finished. Set it as a controller's ControllerConfig.Metrics.
type Counter struct {
	mu   sync.Mutex
	n    int
	cond *sync.Cond
}

// NewCounter returns a counter at zero.
func NewCounter() *Counter {
	f := &Counter{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *Counter) Added(int)                  {}
func (f *Counter) Started(int, time.Duration) {}
func (f *Counter) Retried()                   {}

// Finished counts one finished item.
func (f *Counter) Finished(int, time.Duration) {
	f.mu.Lock()
	f.n++
	f.cond.Broadcast()
	f.mu.Unlock()
}

// Count returns the number of finished items.
func (f *Counter) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// WaitFor waits until at least n items have finished, and fails the test
// after 10 seconds.
func (f *Counter) WaitFor(t testing.TB, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f.mu.Lock()
		for f.n < n {
			f.cond.Wait()
		}
		f.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d items finished within 10s; want %d", f.Count(), n)
	}
}
