package workqueue

import (
	"math"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// delayState is the delay heap and the timer that wakes the delay loop for
// its earliest item. All fields are guarded by Queue.mu.
type delayState[T comparable] struct {
	heap    []*entry[T] // min-heap on (due, seq)
	seq     uint64      // orders items with the same due time by request
	timer   clock.Timer // fires at timerAt; nil when none is set
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
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	if q.shutdown {
		return
	}
	if q.metrics != nil {
		q.metrics.Retried()
	}
	q.addAfterLocked(q.entryFor(item), d)
}

func (q *Queue[T]) addAfterLocked(e *entry[T], d time.Duration) {
	if d <= 0 {
		q.addLocked(e)
		return
	}
	if e.state&(queued|dirty) != 0 {
		return // already due now
	}
	now := q.now()
	due := int64(math.MaxInt64)
	if int64(d) < math.MaxInt64-now {
		due = now + int64(d)
	}
	h := &q.delay
	if e.state&delayed != 0 {
		if due >= e.due {
			return
		}
		e.due, e.seq = due, h.seq
		h.seq++
		h.up(e.index)
	} else {
		e.due, e.seq = due, h.seq
		h.seq++
		e.state |= delayed
		h.push(e)
	}
	if e.index == 0 {
		q.armTimer(now, due)
	}
}

// armTimer makes sure the delay goroutine wakes by due, starting it if it
// is not running. The timer is made here, by the caller, so that a test
// can step a fake clock as soon as AddAfter returns.
func (q *Queue[T]) armTimer(now, due int64) {
	h := &q.delay
	if h.timer != nil && h.timerAt <= due {
		return
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.timer, h.timerAt = q.clock.NewTimer(time.Duration(due-now)), due
	if h.running {
		q.wakeDelayLoop()
		return
	}
	h.running = true
	q.wg.Add(1)
	go q.delayLoop()
}

func (q *Queue[T]) wakeDelayLoop() {
	select {
	case q.delay.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// delayLoop moves due items from the heap to the queue. It runs while the
// heap is not empty and the queue is not shut down.
func (q *Queue[T]) delayLoop() {
	defer q.wg.Done()
	h := &q.delay
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.shutdown && len(h.heap) > 0 {
		now := q.now()
		for len(h.heap) > 0 && h.heap[0].due <= now {
			e := h.heap[0]
			h.remove(e)
			e.state &^= delayed
			q.addLocked(e)
		}
		if len(h.heap) == 0 {
			break
		}
		if next := h.heap[0].due; h.timer == nil || h.timerAt > next {
			if h.timer != nil {
				h.timer.Stop()
			}
			h.timer, h.timerAt = q.clock.NewTimer(time.Duration(next-now)), next
		}
		t := h.timer
		q.mu.Unlock()
		fired := false
		select {
		case <-t.C():
			fired = true
		case <-h.wake:
		}
		q.mu.Lock()
		if fired && h.timer == t {
			h.timer = nil
		}
	}
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.running = false
}

// discardDelayed empties the heap at shutdown and wakes the delay
// goroutine so that it exits.
func (q *Queue[T]) discardDelayed() {
	h := &q.delay
	for _, e := range h.heap {
		e.state &^= delayed
		q.releaseIfIdle(e)
	}
	clear(h.heap)
	h.heap = nil
	q.wakeDelayLoop()
}

// The heap is written out rather than built on container/heap, to keep
// interface calls out of AddAfter.

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

// remove takes e out of the heap; e.index is left as it was, so callers
// can tell whether e was the earliest item.
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
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.index = i
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
