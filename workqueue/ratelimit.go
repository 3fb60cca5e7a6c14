package workqueue

import (
	"math"
	"time"
)

// RateLimiter decides how long an item that failed waits before it is
// retried, and keeps the per-item failure counts that this depends on.
// Implementations must be safe for concurrent use. A queue calls its
// limiter with the queue's lock held, so a limiter must not call back into
// the queue.
type RateLimiter[T comparable] interface {
	// When records a failure of item and returns how long to wait before
	// retrying it.
	When(item T) time.Duration
	// Forget clears what the limiter remembers of item.
	Forget(item T)
	// NumRequeues returns how many failures of item are remembered.
	NumRequeues(item T) int
}

// forgetGrace is how long after a successful Done the queue forgets an
// item's failures by itself, if the worker neither called Forget nor
// reported a new failure with AddRateLimited.
const forgetGrace = int64(time.Second)

// forgetRecord is an entry of Queue.forgets: e is due to be looked at, at
// time at.
type forgetRecord[T comparable] struct {
	e  *entry[T]
	at int64
}

// AddRateLimited records a failure of item with the rate limiter and adds
// item after the delay the limiter returns, under the rules of
// [Queue.AddAfter]. It does nothing after ShutDown; the limiter is then not
// consulted.
//
// # Failures are forgotten
//
// The contract inherited from client-go is that a worker calls
// [Queue.Forget] when an item succeeds. Workers that forget to do so leak
// the item's failure count, for ever if the item never comes back (a
// deleted object). This queue closes the leak: when Done is called for an
// item that has failures on record and was not passed to AddRateLimited
// since its Get, the queue treats the run as a success and forgets the
// failures itself one second (by the queue's clock) later, unless Forget or
// AddRateLimited is called for the item first. The grace second keeps
// backoff growing for workers that call AddRateLimited just after Done
// rather than before it. The queue's own record of an item is dropped
// with it, so neither the limiter nor the queue grows with items that were
// processed and gone.
//
// The worker loop should still call Forget on success: it is immediate,
// and it is the only way to clear failures recorded by AddRateLimited
// calls made outside a worker for an item that is never processed.
func (q *Queue[T]) AddRateLimited(item T) {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	d := q.limiter.When(item)
	e := q.entryFor(item)
	e.state = e.state&^armed | limited
	if e.state&processing != 0 {
		e.state |= failed
	}
	if q.metrics != nil {
		q.metrics.Retried()
	}
	if d <= 0 {
		q.addLocked(e)
		return
	}
	h := &q.delay
	now := q.now()
	due := addSat(now, d)
	q.addAfterLocked(e, due, h.seq.Add(1), false)
	if e.state&delayed != 0 && e.due == due {
		h.imu.Lock()
		q.armTimer(now, due)
		h.imu.Unlock()
	}
}

// Forget clears the rate limiter's failure count of item, so that its next
// AddRateLimited waits the base delay. It does not cancel a pending
// AddAfter or AddRateLimited: the item still comes back when due.
func (q *Queue[T]) Forget(item T) {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limiter.Forget(item)
	if e := q.items[item]; e != nil {
		e.state &^= limited | failed | armed
		q.releaseIfIdle(e)
	}
}

// NumRequeues returns the number of failures the rate limiter remembers
// for item.
func (q *Queue[T]) NumRequeues(item T) int {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limiter.NumRequeues(item)
}

// settleFailures is called by Done for e. It arms the automatic Forget of
// e if e has failures on record but did not fail this time, and forgets
// the failures of items whose grace has passed. Entries other than e are
// released here if idle; Done releases e itself.
func (q *Queue[T]) settleFailures(e *entry[T]) {
	now := q.now()
	if e.state&(limited|failed) == limited {
		e.forgetAt = math.MaxInt64
		if now < math.MaxInt64-forgetGrace {
			e.forgetAt = now + forgetGrace
		}
		e.state |= armed
		if e.state&inForgets == 0 {
			e.state |= inForgets
			q.forgets.push(forgetRecord[T]{e, e.forgetAt})
		}
	}
	for q.forgets.len() > 0 && q.forgets.peek().at <= now {
		f := q.forgets.pop().e
		switch {
		case f.state&armed != 0 && f.forgetAt > now:
			// Armed again since this record was made: look again later.
			q.forgets.push(forgetRecord[T]{f, f.forgetAt})
			continue
		case f.state&armed != 0:
			q.limiter.Forget(f.key)
			f.state &^= limited | failed | armed
		}
		f.state &^= inForgets
		if f != e {
			q.releaseIfIdle(f)
		}
	}
}
