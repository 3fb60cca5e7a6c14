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
// will fire by the request's due time. The delay goroutine merges the
// inbox into the queue, where the map insert and the heap push happen.
//
// Requests carry a sequence number. Add and Get record in the item's entry
// the latest number handed out (satSeq), and a request whose number is not
// above it has been satisfied by that Add or Get and is dropped when
// merged. This gives the same results as merging at once: merging requests
// keeps the earliest due time, which does not depend on their order.
// Idle entries are kept while requests wait, so that satSeq is not lost.

// maxInbox bounds the inbox: a caller that finds it this full merges it
// itself.
const maxInbox = 1 << 16

// mergeChunk is how many requests the delay goroutine merges before it
// lets others take the queue's lock.
const mergeChunk = 256

// delayRequest is an AddAfter waiting in the inbox.
type delayRequest[T comparable] struct {
	key T
	due int64
	seq uint64
}

// delayState is the delay heap, the inbox and the timer.
type delayState[T comparable] struct {
	heap []*entry[T] // min-heap on (due, seq); guarded by Queue.mu

	seq     atomic.Uint64 // last request number handed out
	pending atomic.Int64  // requests in the inbox or being merged

	imu     sync.Mutex // guards the fields below; taken after Queue.mu
	inbox   []delayRequest[T]
	spare   []delayRequest[T] // an empty buffer for the next inbox
	closed  bool              // the queue is shut down
	timer   clock.Timer       // fires at timerAt; nil when none is set
	timerAt int64
	running bool          // the delay goroutine is running
	wake    chan struct{} // tells the delay goroutine to look again
}

// AddAfter adds item once d has passed, as measured by the queue's clock.
// With d ≤ 0 it is [Queue.Add].
//
// An item has at most one pending due time, and the earliest request wins:
//
//   - a later AddAfter with an earlier due time brings the item forward;
//   - one with a later due time changes nothing (it cannot postpone);
//   - if the item is already waiting for Get, or will be queued again at
//     Done, it is due now and AddAfter changes nothing;
//   - [Queue.Add] of an item waiting here makes it due now, and it is then
//     processed once, not a second time when the delay ends.
//
// An item that is being processed when its delay ends is queued again at
// Done, as with Add. After ShutDown, AddAfter does nothing.
//
// While items wait here the queue runs one goroutine that moves them to the
// queue when due. It exits as soon as no item waits, or at ShutDown, which
// waits for it; a queue never used with a delay runs no goroutine at all.
// The timer for an item is set before AddAfter returns, so a test may step
// a fake clock right away.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.init()
	now := q.now()
	due := addSat(now, d)
	h := &q.delay
	h.imu.Lock()
	if h.closed {
		h.imu.Unlock()
		return
	}
	h.pending.Add(1) // before seq: see trimIdle
	h.inbox = append(h.inbox, delayRequest[T]{key: item, due: due, seq: h.seq.Add(1)})
	full := len(h.inbox) >= maxInbox
	q.armTimer(now, due, len(h.inbox) == 1)
	h.imu.Unlock()
	if full {
		q.mu.Lock()
		q.mergeInbox(false)
		q.mu.Unlock()
	}
}

func addSat(now int64, d time.Duration) int64 {
	if int64(d) >= math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// addAfterLocked applies a delay request for e that is due at due.
func (q *Queue[T]) addAfterLocked(e *entry[T], now, due int64, seq uint64) {
	if due <= now {
		q.addLocked(e)
		return
	}
	if e.state&(queued|dirty) != 0 {
		return // already due now
	}
	h := &q.delay
	if e.state&delayed != 0 {
		if due >= e.due {
			return
		}
		e.due, e.seq = due, seq
		h.up(e.index)
		return
	}
	e.due, e.seq = due, seq
	e.state |= delayed
	h.push(e)
}

// mergeInbox moves the requests of the inbox into the queue. It is called
// with mu held; with yield it lets others take mu between chunks.
func (q *Queue[T]) mergeInbox(yield bool) {
	h := &q.delay
	for {
		h.imu.Lock()
		batch := h.inbox
		h.inbox, h.spare = h.spare, nil
		h.imu.Unlock()
		if len(batch) == 0 {
			return
		}
		now := q.now()
		for i, r := range batch {
			if yield && i > 0 && i%mergeChunk == 0 {
				q.mu.Unlock()
				q.mu.Lock()
				now = q.now()
			}
			if q.shutdown {
				break
			}
			if e := q.items[r.key]; e != nil && e.satSeq >= r.seq {
				continue // an Add or a Get came after the request
			}
			if q.metrics != nil {
				q.metrics.Retried()
			}
			q.addAfterLocked(q.entryFor(r.key), now, r.due, r.seq)
		}
		h.pending.Add(-int64(len(batch)))
		clear(batch)
		h.imu.Lock()
		if h.spare == nil {
			h.spare = batch[:0]
		}
		h.imu.Unlock()
		q.trimIdle()
	}
}

// armTimer makes sure that the delay goroutine wakes by due, starting the
// goroutine if it is not running. It is called with imu held. kick wakes
// the goroutine even if the timer is unchanged, to merge the inbox.
func (q *Queue[T]) armTimer(now, due int64, kick bool) {
	h := &q.delay
	if h.timer == nil || due < h.timerAt {
		if h.timer != nil {
			h.timer.Stop()
		}
		h.timer, h.timerAt = q.clock.NewTimer(time.Duration(due-now)), due
		kick = true
	}
	if !h.running {
		h.running = true
		q.wg.Add(1)
		go q.delayLoop()
		return
	}
	if kick {
		q.wakeDelayLoop()
	}
}

func (q *Queue[T]) wakeDelayLoop() {
	select {
	case q.delay.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// delayLoop merges the inbox and moves due items to the queue. It runs
// while requests or delayed items remain and the queue is not shut down.
func (q *Queue[T]) delayLoop() {
	defer q.wg.Done()
	h := &q.delay
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.shutdown {
		q.mergeInbox(true)
		if q.shutdown {
			break
		}
		now := q.now()
		for len(h.heap) > 0 && h.heap[0].due <= now {
			e := h.heap[0]
			h.remove(e)
			e.state &^= delayed
			q.addLocked(e)
		}
		h.imu.Lock()
		if len(h.inbox) > 0 {
			h.imu.Unlock()
			continue
		}
		if len(h.heap) == 0 {
			if h.timer != nil {
				h.timer.Stop()
				h.timer = nil
			}
			h.running = false
			h.imu.Unlock()
			return
		}
		if next := h.heap[0].due; h.timer == nil || h.timerAt > next {
			if h.timer != nil {
				h.timer.Stop()
			}
			h.timer, h.timerAt = q.clock.NewTimer(time.Duration(next-now)), next
		}
		t := h.timer
		h.imu.Unlock()

		q.mu.Unlock()
		fired := false
		select {
		case <-t.C():
			fired = true
		case <-h.wake:
		}
		q.mu.Lock()
		if fired {
			h.imu.Lock()
			if h.timer == t {
				h.timer = nil
			}
			h.imu.Unlock()
		}
	}
	h.imu.Lock()
	h.running = false
	h.imu.Unlock()
}

// discardDelayed empties the heap and the inbox at shutdown, stops the
// timer and wakes the delay goroutine so that it exits. mu is held.
func (q *Queue[T]) discardDelayed() {
	h := &q.delay
	for _, e := range h.heap {
		e.state &^= delayed
		q.releaseIfIdle(e)
	}
	clear(h.heap)
	h.heap = nil
	h.imu.Lock()
	h.closed = true
	h.pending.Add(-int64(len(h.inbox)))
	h.inbox, h.spare = nil, nil
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.imu.Unlock()
	q.wakeDelayLoop()
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
