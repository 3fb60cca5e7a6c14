// Package watchfilter drops events from a watch. Unlike apimachinery's
// watch.Filter, whose goroutine blocks forever on an event nobody reads
// after Stop, its goroutine ends once Stop is called.
package watchfilter

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// Filter returns a watch of w's events for which keep returns true. Stop
// stops w and ends the returned watch (its channel closes) without
// waiting for anyone to read it.
func Filter(w watch.Interface, keep func(watch.Event) bool) watch.Interface {
	f := &filtered{in: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go f.loop(keep)
	return f
}

type filtered struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

var _ watch.Interface = (*filtered)(nil)

func (f *filtered) ResultChan() <-chan watch.Event { return f.out }

func (f *filtered) Stop() {
	f.once.Do(func() { close(f.stop) })
	f.in.Stop()
}

func (f *filtered) loop(keep func(watch.Event) bool) {
	defer close(f.out)
	for {
		select {
		case <-f.stop:
			return
		case ev, ok := <-f.in.ResultChan():
			if !ok {
				return
			}
			if !keep(ev) {
				continue
			}
			select {
			case f.out <- ev:
			case <-f.stop:
				return
			}
		}
	}
}
