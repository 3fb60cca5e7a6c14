package fakewatch

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Watch is a watch fed by a test. Create it with [New]. The producer's
// methods (Add, Modify, Delete, Bookmark, Error, Action, Close) may be
// called from any goroutine, before or while a consumer reads; the
// consumer's are those of watch.Interface and internal/watchproto.AckWatcher.
type Watch struct {
	src    *clock.Source // nil on clocks that keep no account
	result chan watch.Event
	wake   chan struct{} // buffer 1: something became deliverable
	stop   chan struct{} // closed by Stop
	once   sync.Once

	mu      sync.Mutex
	queue   []*item      // fed, not yet delivered
	acking  bool         // the consumer calls Ack
	unacked []clock.Work // delivered and not acknowledged, then the end
	early   int          // Acks that came before run had filed the event's work
	closed  bool         // Close or an error event: nothing more is accepted
	stopped bool         // Stop was called
}

// item is a fed event, or the end of the watch (end set).
type item struct {
	ev    watch.Event
	end   bool
	work  clock.Work
	ready bool // its turn has come: run may deliver it
}

// New returns an open watch whose events are tracked work on c (see the
// package documentation); name appears in the clock's diagnostics. On a
// clock other than a *clock.Fake nothing is tracked. Its goroutine ends
// when the consumer calls Stop.
func New(c clock.Clock, name string) *Watch {
	w := &Watch{
		src:    clock.NewSource(c, name),
		result: make(chan watch.Event),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	go w.run()
	return w
}

// Add feeds an Added event for obj. The consumer receives obj itself, as
// from watch.FakeWatcher: do not modify it afterwards.
func (w *Watch) Add(obj runtime.Object) { w.Action(watch.Added, obj) }

// Modify feeds a Modified event for obj.
func (w *Watch) Modify(obj runtime.Object) { w.Action(watch.Modified, obj) }

// Delete feeds a Deleted event for obj.
func (w *Watch) Delete(obj runtime.Object) { w.Action(watch.Deleted, obj) }

// Bookmark feeds a Bookmark event; obj carries the resource version.
func (w *Watch) Bookmark(obj runtime.Object) { w.Action(watch.Bookmark, obj) }

// Error feeds an Error event (obj is usually a *metav1.Status). A consumer
// such as an informer ends the watch on it, so the watch accepts nothing
// more, and the event's work lasts until Stop, like an end.
func (w *Watch) Error(obj runtime.Object) { w.Action(watch.Error, obj) }

// Action feeds an event of type typ. Events fed after the watch was
// closed or stopped are dropped, as a real watch drops what comes after
// its end.
func (w *Watch) Action(typ watch.EventType, obj runtime.Object) {
	w.feed(&item{ev: watch.Event{Type: typ, Object: obj}}, typ == watch.Error)
}

// Close ends the watch from the server's side: the consumer receives what
// was fed before, then sees the channel close. It is safe to call more
// than once.
func (w *Watch) Close() { w.feed(&item{end: true}, true) }

// feed queues it and starts its work; last closes the watch to what comes
// after it.
func (w *Watch) feed(it *item, last bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.stopped {
		return
	}
	w.closed = last
	var now bool
	it.work, now = w.src.Start(func() { w.release(it) })
	w.queue = append(w.queue, it)
	if now {
		it.ready = true
		w.signal()
	}
}

// release lets run deliver it, when its turn comes on a deterministic
// clock.
func (w *Watch) release(it *item) {
	w.mu.Lock()
	it.ready = true
	w.mu.Unlock()
	w.signal()
}

func (w *Watch) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ResultChan returns the event channel. It is closed after the end of the
// watch (Close) has been delivered, or when the consumer calls Stop. The
// consumer must call Stop in any case: until then the end of the watch is
// unfinished work.
func (w *Watch) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch from the consumer's side and finishes the work of
// everything not delivered or not acknowledged. It is safe to call more
// than once.
func (w *Watch) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.once.Do(func() { close(w.stop) })
}

// Stopped reports whether the consumer has called Stop.
func (w *Watch) Stopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// AckEvents makes the work of each event last until its Ack rather than
// until it is received; see internal/watchproto.AckWatcher.
func (w *Watch) AckEvents() {
	w.mu.Lock()
	w.acking = true
	w.mu.Unlock()
}

// Ack finishes the work of the oldest event received and not yet
// acknowledged.
func (w *Watch) Ack() {
	w.mu.Lock()
	if len(w.unacked) == 0 {
		// The consumer was quicker than run, which files the work of an
		// event once the send has completed.
		w.early++
		w.mu.Unlock()
		return
	}
	done := w.unacked[0]
	w.unacked = w.unacked[1:]
	w.mu.Unlock()
	done.Done()
}

// run delivers the events in order until the end of the watch or Stop,
// then closes the channel and finishes the work left.
func (w *Watch) run() {
	defer w.finish() // last: after the close, which ends the work of an end
	defer close(w.result)
	for {
		w.mu.Lock()
		var it *item
		if len(w.queue) > 0 && w.queue[0].ready {
			it = w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			if it.end {
				w.unacked = append(w.unacked, it.work) // finished by finish
			}
		}
		w.mu.Unlock()
		switch {
		case it == nil:
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			}
		case it.end:
			return
		}
		select {
		case w.result <- it.ev:
		case <-w.stop:
			it.work.Done()
			return
		}
		w.mu.Lock()
		switch {
		case !w.acking:
		case w.early > 0:
			w.early-- // acknowledged already
		default:
			w.unacked = append(w.unacked, it.work)
			it = nil
		}
		w.mu.Unlock()
		if it != nil {
			it.work.Done()
		}
	}
}

// finish finishes the work of everything not delivered or acknowledged,
// once the channel is closed and the consumer has called Stop: until then
// the consumer may still acknowledge, and it is only at Stop that an
// informer has taken over the work that the end of the watch causes. The
// end is held until Stop even for a consumer that has not called
// AckEvents yet: an informer calls it after Watch returns, and the watch
// may have ended by then.
func (w *Watch) finish() {
	<-w.stop
	w.mu.Lock()
	w.closed = true
	left := w.unacked
	for _, it := range w.queue {
		left = append(left, it.work)
	}
	w.queue, w.unacked = nil, nil
	w.mu.Unlock()
	for _, wk := range left {
		wk.Done()
	}
}
