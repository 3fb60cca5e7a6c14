package workqueue

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// How AddAfter stays cheap for its caller: the caller only appends a
// request to the inbox, under a lock of its own, and makes sure a timer
// will fire by the request's due time. The timer's callback merges the
// inbox into the queue, where the map insert and the heap push happen. A
// caller merges the inbox itself only when it is full, or when its own
// request could otherwise be merged after it is due.
//
// There are two kinds of requests. A timed one (AddAfter, AddRateLimited)
// is independent of the ready FIFO, as client-go's waiting queue is of its
// queue: an item may be queued, or being processed, and wait out a timed
// delay at the same time; when the delay ends the item is added again. A
// batched one (AddBatched) is served by any add of the item before it is
// due, and by any Get after it was made. An entry keeps the earliest due
// time of each kind and sits in the heap once, at the earlier of the two.
//
// Requests carry a sequence number, which orders equal due times. Get
// records in the item's entry the latest number handed out (satSeq): a
// batched request whose number is not above it was made before that Get,
// which served it, and it is dropped when merged. Idle entries are kept
// while requests wait, so that satSeq is not lost. Merging keeps the
// earliest due time of each kind, whatever the order of the requests, so
// merging late gives the same results as merging at once.

const (
	// chunkLen is the length of the inbox's chunks: the inbox grows by
	// whole chunks, so that an append never copies earlier requests.
	chunkLen = 256
	// maxInbox bounds the inbox, to about 12MB with NamespacedName keys:
	// a caller that finds it this full merges it itself.
	maxInbox = 1 << 18
	// mergeCost is a generous estimate of the time to merge one request
	// (about 0.3–2µs is measured). A caller whose request is due sooner
	// than the requests before it can be merged, at this cost each,
	// merges the inbox itself, so that a backlog does not make requests
	// with short delays late.
	mergeCost = 10 * time.Microsecond
	// maxFreeChunks bounds the pool of chunks kept for reuse.
	maxFreeChunks = 64
)

// delayRequest is an AddAfter waiting in the inbox.
type delayRequest[T comparable] struct {
	key T
	at  int64 // when it was made; never earlier than the requests before it
	due int64
	seq uint64
	// batch marks an AddBatched request.
	batch bool
}

// delayState is the delay heap, the inbox and the timer.
type delayState[T comparable] struct {
	heap []*entry[T] // min-heap on (due, seq); guarded by Queue.mu

	seq     atomic.Uint64 // last request number handed out
	pending atomic.Int64  // requests in the inbox or being merged

	imu      sync.Mutex          // guards the fields below; taken after Queue.mu
	inbox    [][]delayRequest[T] // chunks of requests, oldest first; the last is being filled
	n        int                 // requests in inbox
	free     [][]delayRequest[T] // empty chunks for reuse
	closed   bool                // the queue is shut down
	inboxMin int64               // no request in the inbox is due before it
	timer    clock.Timer         // fires at timerAt; nil when none is set
	timerAt  int64
	gen      uint64 // counts timers set, so that a callback knows whether it is current
}

// AddAfter adds item once d has passed, as measured by the queue's clock.
// With d ≤ 0 it is [Queue.Add].
//
// An item has at most one pending due time, and the earliest request wins:
//
//   - a later AddAfter with an earlier due time brings the item forward;
//   - one with a later due time changes nothing (it cannot postpone).
//
// The delay is independent of the item's other adds, as in client-go: an
// item already waiting for Get, or being processed, still waits out its
// delay, and [Queue.Add] does not cancel it; when the delay ends the item
// is added as by Add (nothing happens if it is still waiting for Get; one
// that is being processed is queued again at Done). So a retry scheduled by
// [Queue.AddRateLimited] happens when due even if the item has been
// processed, and failed again, meanwhile. After ShutDown, AddAfter does
// nothing.
//
// The queue runs no goroutine of its own: one timer of the queue's clock
// ([clock.Clock.AfterFunc]) moves the items to the queue when they are
// due. Before AddAfter returns, that timer is set for the item's due time
// or earlier (or a timer that has fired is about to run its callback,
// which takes the item into account), so a test may move a fake clock
// right away; on a [clock.Fake] the callback runs before Step or SetTime
// returns.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.addDelayed(item, d, false)
}

// AddBatched adds item within d: once d has passed, as measured by the
// queue's clock, unless an add of the item comes first, which serves the
// request. A burst of AddBatched calls for an item therefore costs one
// run, d after the first of them, and a plain [Queue.Add] meanwhile (or a
// Get of the item after the request was made) takes them all along: the
// item runs once, at once, and not again when d ends. With d ≤ 0 it is
// [Queue.Add]. A pending AddAfter or AddRateLimited of the item is not
// affected. After ShutDown, AddBatched does nothing.
//
// It is what a controller's BatchPeriod uses; client-go has no
// counterpart (its AddAfter is [Queue.AddAfter]).
func (q *Queue[T]) AddBatched(item T, d time.Duration) {
	q.addDelayed(item, d, true)
}

// addDelayed is AddAfter (batch false) or AddBatched.
func (q *Queue[T]) addDelayed(item T, d time.Duration, batch bool) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.init()
	h := &q.delay
	h.imu.Lock()
	if h.closed {
		h.imu.Unlock()
		return
	}
	now := q.now() // under imu, so that requests are in order of time
	due := addSat(now, d)
	h.pending.Add(1) // before seq: see trimIdle
	h.appendLocked(delayRequest[T]{key: item, at: now, due: due, seq: h.seq.Add(1), batch: batch})
	if h.n == 1 || due < h.inboxMin {
		h.inboxMin = due
	}
	mergeNow := h.n >= maxInbox || time.Duration(h.n-1)*mergeCost >= d
	q.armTimer(now, due)
	if q.metrics != nil {
		q.metrics.Retried()
	}
	h.imu.Unlock()
	if mergeNow {
		q.mu.Lock()
		q.mergeInbox()
		q.mu.Unlock()
	}
}

func addSat(now int64, d time.Duration) int64 {
	if int64(d) >= math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// addAfterLocked applies a delay request for e that is due at due, timed
// or batched. A timed request goes to the heap even if it is due already,
// so that the timer's callback moves due items to the queue in order of
// due time, and even if the item is queued or being processed: it is added
// again when due (client-go's waiting queue does not look at its queue
// either). A batched request of an item already queued, or queued again at
// Done, is served already.
func (q *Queue[T]) addAfterLocked(e *entry[T], due int64, seq uint64, batch bool) {
	if batch {
		if e.state&(queued|dirty) != 0 || e.state&batched != 0 && due >= e.batchDue {
			return
		}
		e.batchDue, e.batchSeq = due, seq
		e.state |= batched
	} else {
		if e.state&timed != 0 && due >= e.timedDue {
			return
		}
		e.timedDue, e.timedSeq = due, seq
		e.state |= timed
	}
	q.delay.place(e)
}

// place puts e in the heap at the earlier of its pending due times, or
// takes it out of the heap when it has none. mu is held.
func (h *delayState[T]) place(e *entry[T]) {
	var due int64
	var seq uint64
	switch t, b := e.state&timed != 0, e.state&batched != 0; {
	case t && (!b || e.timedDue < e.batchDue || e.timedDue == e.batchDue && e.timedSeq < e.batchSeq):
		due, seq = e.timedDue, e.timedSeq
	case b:
		due, seq = e.batchDue, e.batchSeq
	default:
		if e.state&delayed != 0 {
			h.remove(e)
			e.state &^= delayed
		}
		return
	}
	if e.state&delayed == 0 {
		e.due, e.seq = due, seq
		e.state |= delayed
		h.push(e)
		return
	}
	if due == e.due && seq == e.seq {
		return
	}
	e.due, e.seq = due, seq
	if !h.down(e.index) {
		h.up(e.index)
	}
}

// appendLocked adds r to the inbox. imu is held.
func (h *delayState[T]) appendLocked(r delayRequest[T]) {
	last := len(h.inbox) - 1
	if last < 0 || len(h.inbox[last]) == chunkLen {
		var c []delayRequest[T]
		if n := len(h.free); n > 0 {
			c, h.free = h.free[n-1], h.free[:n-1]
		} else {
			c = make([]delayRequest[T], 0, chunkLen)
		}
		h.inbox = append(h.inbox, c)
		last++
	}
	h.inbox[last] = append(h.inbox[last], r)
	h.n++
}

// mergeInbox moves all the requests of the inbox into the queue. mu is
// held.
func (q *Queue[T]) mergeInbox() {
	for q.mergeChunk() {
	}
}

// mergeChunk moves the oldest chunk of requests from the inbox into the
// queue, and reports whether there was one. mu is held.
func (q *Queue[T]) mergeChunk() bool {
	h := &q.delay
	h.imu.Lock()
	if h.n == 0 {
		h.imu.Unlock()
		return false
	}
	chunk := h.inbox[0]
	h.inbox[0] = nil
	h.inbox = h.inbox[1:]
	h.n -= len(chunk)
	h.imu.Unlock()

	for _, r := range chunk {
		if q.shutdown {
			break
		}
		e := q.items[r.key]
		switch {
		case e == nil:
			e = q.newEntry(r.key)
		case r.batch && e.satSeq >= r.seq:
			continue // a Get came after the request and served it
		}
		q.addAfterLocked(e, r.due, r.seq, r.batch)
	}
	h.pending.Add(-int64(len(chunk)))
	clear(chunk)
	h.imu.Lock()
	if len(h.free) < maxFreeChunks {
		h.free = append(h.free, chunk[:0])
	}
	h.imu.Unlock()
	q.trimIdle()
	return true
}

// armTimer makes sure that a timer fires by due. It is called with imu
// held. A timer already set for due or earlier is kept: when it fires, its
// callback merges the inbox and sets the timer for what remains.
func (q *Queue[T]) armTimer(now, due int64) {
	h := &q.delay
	if h.timer != nil && due >= h.timerAt {
		return
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.gen++
	gen := h.gen
	h.timer, h.timerAt = q.clock.AfterFunc(time.Duration(due-now), func() { q.onTimer(gen) }), due
}

// onTimer runs when the delay timer of generation gen fires: it merges the
// inbox, moves the items that are due to the queue, in order of due time,
// and sets the timer for the next one. On a fake clock it is tracked work,
// so the items it queues are accounted for before virtual time can move
// on.
func (q *Queue[T]) onTimer(gen uint64) {
	h := &q.delay
	q.mu.Lock()
	defer q.mu.Unlock()
	h.imu.Lock()
	if h.gen == gen {
		h.timer = nil // it fired: the next request must set a new one
	}
	h.imu.Unlock()
	if q.shutdown {
		return
	}
	q.mergeInbox()
	limit := q.now()
	h.imu.Lock()
	if h.n > 0 {
		// Requests made since the merge are due after they were made, and
		// no earlier than the oldest of them was made: items due before
		// that can go now without breaking the order of due times.
		limit = min(limit, h.inbox[0][0].at)
	}
	h.imu.Unlock()
	for len(h.heap) > 0 && h.heap[0].due <= limit {
		// The request that is due goes; the other kind's, if later,
		// keeps e in the heap (a batched one is served by the add).
		e := h.heap[0]
		if e.state&timed != 0 && e.timedDue <= limit {
			e.state &^= timed
		}
		if e.state&batched != 0 && e.batchDue <= limit {
			e.state &^= batched
		}
		h.place(e)
		q.addLocked(e)
	}
	h.imu.Lock()
	defer h.imu.Unlock()
	next, ok := int64(math.MaxInt64), false
	if len(h.heap) > 0 {
		next, ok = h.heap[0].due, true
	}
	if h.n > 0 {
		next, ok = min(next, h.inboxMin), true
	}
	if ok {
		q.armTimer(q.now(), next)
	}
}

// stopIfEmpty stops the timer when no request waits in the inbox. The heap
// is empty and Queue.mu is held.
func (h *delayState[T]) stopIfEmpty() {
	h.imu.Lock()
	defer h.imu.Unlock()
	if h.n == 0 && h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// discardDelayed empties the heap and the inbox at shutdown and stops the
// timer. mu is held.
func (q *Queue[T]) discardDelayed() {
	h := &q.delay
	for _, e := range h.heap {
		e.state &^= delayed | timed | batched
		q.releaseIfIdle(e)
	}
	clear(h.heap)
	h.heap = nil
	h.imu.Lock()
	h.closed = true
	h.pending.Add(-int64(h.n))
	h.inbox, h.n, h.free = nil, 0, nil
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.imu.Unlock()
}

// The heap is written out rather than built on container/heap, to keep
// interface calls out of the merge.

func (h *delayState[T]) less(i, j int) bool {
	a, b := h.heap[i], h.heap[j]
	return a.due < b.due || a.due == b.due && a.seq < b.seq
}

func (h *delayState[T]) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.heap[i].index = i
	h.heap[j].index = j
}

func (h *delayState[T]) push(e *entry[T]) {
	e.index = len(h.heap)
	h.heap = append(h.heap, e)
	h.up(e.index)
}

// remove takes e out of the heap.
func (h *delayState[T]) remove(e *entry[T]) {
	i, last := e.index, len(h.heap)-1
	if i != last {
		h.swap(i, last)
	}
	h.heap[last] = nil
	h.heap = h.heap[:last]
	if cap(h.heap) > 1024 && len(h.heap) < cap(h.heap)/4 {
		h.heap = append(make([]*entry[T], 0, cap(h.heap)/2), h.heap...)
	}
	if i != last && !h.down(i) {
		h.up(i)
	}
}

func (h *delayState[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts the element at i down and reports whether it moved.
func (h *delayState[T]) down(i int) bool {
	start, n := i, len(h.heap)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}
