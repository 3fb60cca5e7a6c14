package workqueue

import "github.com/ctrlkit/ctrlkit/clock"

// On a fake clock (clock.Fake), the queue reports its items as tracked
// work (clock.Source), so that a simulation's virtual time does not move
// on while an item is about to be processed, and, on a deterministic
// clock, hands them out in their turns.
//
// An item counts only while a worker can take it: one waiting in Get, or
// one that has just called Done and comes back for more. An item queued
// while every worker is busy (asleep in a request with injected latency,
// say) or before any worker has started (a controller waiting for its
// caches) is not work that can happen now, and counting it would stop
// time for good. So the covered items, those that count, are the first
// min(len(ready), free) of the ready FIFO, where free = waiting +
// returning; each keeps its unit of work from the moment it is covered
// until its Done.

// tracking is the queue's account of its items as work. It is guarded by
// Queue.mu.
type tracking struct {
	src       *clock.Source // nil on clocks that keep no account
	waiting   int           // goroutines in Get
	returning int           // workers that will call Get: after a Done, or announced by Serve
	covered   int           // items at the head of ready that are tracked work
	got       bool          // a worker has called Get: the queue is served
}

// pushReady queues e for Get. mu is held.
func (q *Queue[T]) pushReady(e *entry[T]) {
	setQueued(e, true)
	q.ready.push(e)
	if q.track.src == nil {
		q.cond.Signal()
		return
	}
	q.coverLocked()
}

// coverLocked makes ready items tracked work while free workers can take
// them. On a deterministic clock an item covered now is handed out only
// once its turn has come. mu is held.
func (q *Queue[T]) coverLocked() {
	t := &q.track
	if t.src == nil {
		return
	}
	signal := false
	for t.covered < q.ready.len() && t.covered < t.waiting+t.returning {
		e := q.ready.at(t.covered)
		t.covered++
		var now bool
		e.work, now = t.src.Start(func() { q.release(e) })
		if now {
			signal = true
		} else {
			e.state |= unreleased
		}
	}
	if signal {
		q.cond.Broadcast()
	}
}

// enterGet counts a goroutine that starts waiting in Get. mu is held.
func (q *Queue[T]) enterGet() {
	t := &q.track
	if !t.got {
		t.got = true
		t.src.Running()
	}
	if t.returning > 0 {
		t.returning--
	}
	t.waiting++
	q.coverLocked()
}

// takeHead hands out the first ready item to a goroutine in Get; its work,
// if covered, lasts until Done. mu is held.
func (q *Queue[T]) takeHead() *entry[T] {
	t := &q.track
	t.waiting--
	if t.covered > 0 {
		t.covered--
	}
	e := q.ready.pop()
	setQueued(e, false)
	e.state &^= unreleased
	return e
}

// release makes e gettable when its turn comes on a deterministic clock.
func (q *Queue[T]) release(e *entry[T]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.state&unreleased != 0 {
		e.state &^= unreleased
		q.cond.Broadcast() // the waiting workers look at the head of ready
	}
}

// Serve announces that n workers are about to call Get. It matters only on
// a [clock.Fake], where the queue's items are tracked work (see
// [clock.Source]) while a worker can take them: one waiting in Get, or one
// that has called Done and comes back for more. A controller that starts
// its workers once its caches have synced calls Serve with the number of
// workers from the handler's [informer.Handler.OnSynced], before it starts
// them, so that the items queued meanwhile count from that instant rather
// than from each worker's first Get: virtual time cannot slip in between.
// Announce only workers that will come; each one's first Get uses up one
// announcement.
func (q *Queue[T]) Serve(n int) {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.track.returning += max(n, 0)
	if !q.track.got {
		// Until a worker comes, a simulation stuck on the items says that
		// nobody serves this queue (clock.ErrNotRunning).
		q.track.src.Expect()
	}
	q.coverLocked()
}
