// Package queuetest helps tests count what a work queue's workers do.
// Tests that run the queue on a clock.Fake read the count once the clock
// has settled (clock.Fake.Settle): it is then exact, with no waiting.
package queuetest

import (
	"sync"
	"time"
)

// Counter is a workqueue.Metrics that counts the items the queue's
// workers have finished. Set it as a controller's ControllerConfig.Metrics.
type Counter struct {
	mu sync.Mutex
	n  int
}

// NewCounter returns a counter at zero.
func NewCounter() *Counter { return &Counter{} }

func (f *Counter) Added(int)                  {}
func (f *Counter) Started(int, time.Duration) {}
func (f *Counter) Retried()                   {}

// Finished counts one finished item.
func (f *Counter) Finished(int, time.Duration) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

// Count returns the number of finished items.
func (f *Counter) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
