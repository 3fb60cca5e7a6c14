package workqueue

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Config configures a [Queue]. Its zero value is a working configuration.
type Config[T comparable] struct {
	// Name identifies the queue in the errors it returns. It may be empty.
	Name string
	// Clock is the time source for delays, rate limiting, the automatic
	// forgetting of failures and metrics. Nil means [clock.Real].
	Clock clock.Clock
	// RateLimiter picks the delay of [Queue.AddRateLimited] and holds the
	// per-item failure counts. Nil means [DefaultControllerRateLimiter],
	// driven by Clock. Give every queue a limiter of its own: the queue
	// calls its Forget, so a limiter shared between queues would mix up
	// their backoffs.
	RateLimiter RateLimiter[T]
	// Metrics receives the queue's measurements. Nil means none are taken.
	// There is no package-level default.
	Metrics Metrics
}

// Queue is a work queue of keys: fair, stingy, never handing one item to
// two workers at once, with delayed and rate-limited adds. The package
// documentation lists its guarantees.
//
// Create one with [New]. The zero Queue also works, as New(Config[T]{}).
// A Queue must not be copied after first use. All methods are safe for
// concurrent use.
type Queue[T comparable] struct {
	once sync.Once // runs setup, so that the zero Queue works
	mu   sync.Mutex
	cond sync.Cond // L is &mu; signalled when ready grows or shutdown progresses

	name    string
	clock   clock.Clock
	epoch   time.Time // instant 0 of the int64 nanosecond times below
	limiter RateLimiter[T]
	metrics Metrics

	items map[T]*entry[T] // every item the queue knows of; nil until init
	ready ring[*entry[T]] // FIFO of items waiting for Get
	idle  ring[*entry[T]] // recently idle entries, still in items, oldest first
	free  []*entry[T]     // recycled entries, so that steady state allocates nothing
	quick filter[T]       // lock-free lookup of queued items for contended Adds

	lastGot       *entry[T] // the entry Get handed out last: Done's likely argument
	processing    int       // items handed out by Get and not yet Done
	dirtyInFlight int       // processing items re-added meanwhile, queued again at Done

	shutdown bool
	drained  chan struct{} // made at shutdown, closed once nothing is queued or in flight
	closed   bool          // drained is closed

	delay   delayState[T]
	forgets ring[forgetRecord[T]] // items whose failures will be forgotten, oldest first
	track   tracking              // queued items as work on a fake clock; see track.go
}

// entry is the queue's record of one item. It is in items for as long as
// any of the flags in keep is set, and some time after: see releaseIfIdle.
type entry[T comparable] struct {
	key      T
	work     clock.Work // while queued or processing: the item's unit of work
	state    uint16
	index    int         // position in the delay heap while delayed
	due      int64       // when a delayed item becomes ready: the earlier of timedDue and batchDue
	seq      uint64      // delay request that set due; orders equal due times
	timedDue int64       // while timed: the earliest AddAfter or AddRateLimited
	timedSeq uint64      // the request that set timedDue
	batchDue int64       // while batched: the earliest AddBatched not yet served
	batchSeq uint64      // the request that set batchDue
	satSeq   uint64      // batched requests up to this one were served by a Get
	addedAt  int64       // metrics only: when it last became pending
	started  int64       // metrics only: when Get handed it out
	forgetAt int64       // while armed
	pend     atomic.Bool // mirrors queued while published; see coalesce.go
}

const (
	queued     uint16 = 1 << iota // in ready, waiting for Get
	processing                    // handed out by Get, Done not yet called
	dirty                         // added while processing: queue again at Done
	delayed                       // in the delay heap
	timed                         // an AddAfter or AddRateLimited is pending (timedDue)
	batched                       // an AddBatched is pending (batchDue)
	limited                       // the limiter may hold failures for it
	failed                        // AddRateLimited was called since the last Get
	armed                         // its failures will be forgotten at forgetAt
	inForgets                     // referenced by Queue.forgets
	cached                        // referenced by Queue.idle
	published                     // in Queue.quick; never recycled
	unreleased                    // queued, but its turn has not come (deterministic clock)

	keep = queued | processing | delayed | limited | inForgets
)

// maxIdle bounds the number of idle entries kept in Queue.items, and
// maxFree the pool of recycled entries.
const (
	maxIdle = 1024
	maxFree = 1024
)

// New returns an empty queue. It starts no goroutine: see [Queue.AddAfter]
// for the only one a queue ever runs.
func New[T comparable](cfg Config[T]) *Queue[T] {
	q := &Queue[T]{name: cfg.Name, clock: cfg.Clock, limiter: cfg.RateLimiter, metrics: cfg.Metrics}
	q.init()
	if u, ok := cfg.Metrics.(UnfinishedMetrics); ok {
		u.Unfinished(q.Unfinished)
	}
	return q
}

// init fills in the defaults, once, so that the zero Queue is usable.
func (q *Queue[T]) init() { q.once.Do(q.setup) }

func (q *Queue[T]) setup() {
	q.clock = clock.OrReal(q.clock)
	q.epoch = q.clock.Now()
	if q.limiter == nil {
		q.limiter = defaultLimiter[T](q.clock)
	}
	q.cond.L = &q.mu
	q.items = make(map[T]*entry[T])
	q.quick.seed = maphash.MakeSeed()
	q.track.src = clock.NewSource(q.clock, fmt.Sprintf("workqueue %q", q.name))
}

// now reads the clock as nanoseconds since the queue was created.
func (q *Queue[T]) now() int64 { return int64(q.clock.Now().Sub(q.epoch)) }

// Add marks item as needing processing.
//
//   - If item is already waiting for Get, Add does nothing (stingy).
//   - If item is being processed, it is queued again, once, when Done is
//     called for it.
//   - A pending [Queue.AddAfter] or [Queue.AddRateLimited] of item is not
//     affected: the item is added again when that delay ends, as with
//     client-go. A pending [Queue.AddBatched] is served: the item runs
//     once, not again when that delay ends.
//
// After [Queue.ShutDown], Add does nothing.
func (q *Queue[T]) Add(item T) {
	q.init()
	if q.mu.TryLock() {
		defer q.mu.Unlock()
		if !q.shutdown {
			q.mergePending()
			q.addLocked(q.entryFor(item))
		}
		return
	}
	// Contended: most such Adds are of queued items; see coalesce.go.
	if q.quick.coalesced(item) {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.shutdown {
		q.mergePending()
		e := q.entryFor(item)
		q.addLocked(e)
		q.quick.publish(e)
	}
}

// mergePending merges the delay inbox if requests wait in it, so that an
// Add that serves a batched request finds it in the heap and the timer
// goes when nothing is left to wait for. mu is held.
func (q *Queue[T]) mergePending() {
	if q.delay.pending.Load() > 0 {
		q.mergeInbox()
		if len(q.delay.heap) == 0 {
			q.delay.stopIfEmpty()
		}
	}
}

// addLocked makes e pending now: queued, or dirty if it is processing.
// It serves a pending AddBatched of e; a pending AddAfter or
// AddRateLimited is left alone.
func (q *Queue[T]) addLocked(e *entry[T]) {
	if e.state&batched != 0 {
		// The timer may now be early; its callback then finds nothing due
		// and sets it again. With nothing left to wait for, it goes.
		e.state &^= batched
		q.delay.place(e)
		if len(q.delay.heap) == 0 {
			q.delay.stopIfEmpty()
		}
	}
	switch {
	case e.state&(queued|dirty) != 0:
		return
	case e.state&processing != 0:
		e.state |= dirty
		q.dirtyInFlight++
	default:
		q.pushReady(e)
	}
	if q.metrics != nil {
		e.addedAt = q.now()
		q.metrics.Added(q.ready.len())
	}
}

// Get blocks until an item is ready and hands it out. The caller owns the
// item until it calls [Queue.Done] with it; meanwhile no other Get returns
// it. shutdown is true once the queue is shut down and drained: the caller
// should then stop, and item is the zero value.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mergePending()
	q.enterGet()
	for q.ready.len() == 0 || q.ready.peek().state&unreleased != 0 && !q.shutdown {
		// Items re-added while in flight are still to come, even after
		// shutdown.
		if q.shutdown && q.dirtyInFlight == 0 {
			q.track.waiting--
			return item, true
		}
		q.cond.Wait()
	}
	e := q.takeHead()
	e.state = e.state&^failed | processing
	e.satSeq = q.delay.seq.Load() // this run serves the batched requests made so far
	q.lastGot = e
	q.processing++
	if q.metrics != nil {
		e.started = q.now()
		q.metrics.Started(q.ready.len(), time.Duration(e.started-e.addedAt))
	}
	return e.key, false
}

// Done tells the queue that processing of item has finished. If item was
// added again meanwhile, it is queued again now.
//
// Done for an item that is not being processed (never handed out, or Done
// already called) does nothing. Every item from Get needs exactly one Done:
// a missing Done keeps the item from ever being processed again and keeps
// [Queue.ShutDownWithDrain] waiting until its context ends.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// With one worker, the default of controller-runtime, Done is for the
	// item Get handed out last, and a comparison saves a map lookup.
	e := q.lastGot
	if e == nil || e.state&processing == 0 || e.key != item {
		e = q.items[item] // a nil map (zero Queue) reads as empty
	}
	if e == nil || e.state&processing == 0 {
		return
	}
	e.state &^= processing
	q.processing--
	done := e.work
	e.work = clock.Work{}
	q.track.returning++ // the worker comes back for more; see track.go
	if e.state&dirty != 0 {
		e.state &^= dirty
		q.dirtyInFlight--
		q.pushReady(e)
	}
	q.coverLocked()
	if e.state&(limited|failed) == limited || q.forgets.len() > 0 {
		q.settleFailures(e)
	}
	if q.metrics != nil {
		q.metrics.Finished(q.ready.len(), time.Duration(q.now()-e.started))
	}
	q.releaseIfIdle(e)
	if q.shutdown {
		q.shutdownProgress()
	}
	// Last: whatever this run handed on (an AddAfter, the item queued
	// again) is accounted for by now.
	done.Done()
}

// Len returns the number of items waiting for Get. Items being processed
// and items waiting in the delay heap are not counted. Use it for
// information only: it may be stale by the time it returns.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.len()
}

// ShutDown stops the queue taking work:
//
//   - Add, AddAfter and AddRateLimited do nothing from now on.
//   - Items waiting in the delay heap are discarded: they were not due,
//     and running them early would defeat their delay or backoff.
//   - Get keeps handing out the items already queued (including items
//     re-added while in flight, once they are Done), then returns
//     shutdown=true.
//
// ShutDown does not wait for workers; see [Queue.ShutDownWithDrain].
// Calling it more than once is harmless.
func (q *Queue[T]) ShutDown() {
	q.init()
	q.mu.Lock()
	q.shutdownLocked()
	q.mu.Unlock()
}

// ShutDownWithDrain shuts the queue down as [Queue.ShutDown] does, then
// waits until every queued item has been handed out and every in-flight
// item is Done. It returns nil once drained, or, if ctx ends first, an
// error wrapping ctx.Err(); the queue stays shut down either way. A nil ctx
// waits without limit.
func (q *Queue[T]) ShutDownWithDrain(ctx context.Context) error {
	q.init()
	q.mu.Lock()
	q.shutdownLocked()
	drained := q.drained
	q.mu.Unlock()

	select {
	case <-drained:
		return nil
	default:
	}
	var stop <-chan struct{}
	if ctx != nil {
		stop = ctx.Done()
	}
	select {
	case <-drained:
		return nil
	case <-stop:
		return fmt.Errorf("workqueue %q: drain: %w", q.name, ctx.Err())
	}
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

func (q *Queue[T]) shutdownLocked() {
	if q.shutdown {
		return
	}
	q.shutdown = true
	q.drained = make(chan struct{})
	q.discardDelayed()
	q.cond.Broadcast()
	q.shutdownProgress()
}

// shutdownProgress wakes the workers waiting in Get so that they can see
// whether they should stop, and closes drained once nothing is left.
func (q *Queue[T]) shutdownProgress() {
	q.cond.Broadcast()
	if !q.closed && q.ready.len() == 0 && q.processing == 0 {
		q.closed = true
		close(q.drained)
	}
}

// entryFor returns the entry of item, creating it if needed.
func (q *Queue[T]) entryFor(item T) *entry[T] {
	if e := q.items[item]; e != nil {
		return e
	}
	return q.newEntry(item)
}

// newEntry adds an entry for item, which has none.
func (q *Queue[T]) newEntry(item T) *entry[T] {
	var e *entry[T]
	if n := len(q.free); n > 0 {
		e = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		e = new(entry[T])
	}
	e.key = item
	q.items[item] = e
	return e
}

// releaseIfIdle is called when e may no longer be needed. An idle entry
// stays in items for a while, in case its item comes back: controllers
// see the same keys again and again, and a map hit is cheaper than an
// insert and a delete. Only the maxIdle most recently idle entries are
// kept; the oldest is dropped when a new one comes.
func (q *Queue[T]) releaseIfIdle(e *entry[T]) {
	if e.state&(keep|cached) != 0 {
		return
	}
	e.state |= cached
	q.idle.push(e)
	q.trimIdle()
}

// trimIdle drops the oldest idle entries beyond maxIdle. While delay
// requests wait in the inbox it drops none: their satSeq decides whether
// batched requests still hold.
func (q *Queue[T]) trimIdle() {
	for q.idle.len() > maxIdle && q.delay.pending.Load() == 0 {
		q.evict(q.idle.pop())
	}
}

func (q *Queue[T]) evict(old *entry[T]) {
	old.state &^= cached
	if old.state&keep != 0 {
		return // in use again; cached anew when idle
	}
	delete(q.items, old.key)
	if old.state&published != 0 {
		q.quick.unpublish(old)
		return // readers may still hold it: never recycle it
	}
	if len(q.free) < maxFree {
		*old = entry[T]{}
		q.free = append(q.free, old)
	}
}
