package conformance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	cgworkqueue "k8s.io/client-go/util/workqueue"
	utilclock "k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// TestWorkqueue feeds the same random sequence of Add, AddAfter,
// AddRateLimited, Forget, Get, Done, NumRequeues, Len, clock steps and
// ShutDown to ctrlkit's workqueue.Queue and to client-go's rate-limiting
// queue (both with an exponential backoff of 5ms to 1000s and a fake
// clock), and compares every answer: the item each Get hands out, Len,
// NumRequeues, and Get's shutdown at the end.
//
// Making client-go's queue deterministic: its delays are kept by a
// goroutine (the waiting loop) that reads the clock. The clock given to it
// here (loopClock) is moved by hand and reports each timer the loop sets.
// An item delayed by 10,000 hours keeps the loop's heap non-empty, so
// every turn of the loop ends by setting a timer: the test waits for that
// after each request it sends the loop and each timer it fires, and so
// never moves on while the loop is busy. The heartbeat ticker never ticks
// (it only repeats what the timer does).
//
// Equal due times are ordered by request in ours and arbitrarily by
// client-go's heap, so the cases make every due time distinct: each
// operation moves both clocks by 1ns, and every delay and step is a whole
// number of milliseconds, so requests made at different operations are
// never due at the same instant.
//
// The generated workers keep the client-go contract: each item they get
// is finished with AddRateLimited (failure) or Forget (success) before
// Done. Ours forgets the failures of an item that is Done without either
// one second later (workqueue docs); client-go keeps them for ever. That
// deviation, and the ones counted below, are in FINDINGS.md.
func TestWorkqueue(t *testing.T) {
	differential(t, 8, genQueueOps, describeQueueOps, checkQueueOps)
}

// devRateLimitedAfterShutDown: client-go's AddRateLimited asks the limiter
// for a delay even after ShutDown, so NumRequeues counts the failure; ours
// does nothing after ShutDown.
const devRateLimitedAfterShutDown = "AddRateLimited after ShutDown: upstream counts the failure"

// queueOp is one operation of a case. verb is add, after, ratelimited,
// forget, get, fail (AddRateLimited then Done of a processing item),
// succeed (Forget then Done), step, len, requeues or shutdown.
type queueOp struct {
	verb string
	key  string
	d    time.Duration
}

func genQueueOps(r *rand.Rand) []queueOp {
	keys := []string{"a", "b", "c", "d", "e"}[:2+r.IntN(4)]
	key := func() string { return keys[r.IntN(len(keys))] }
	ms := func(n int) time.Duration { return time.Duration(1+r.IntN(n)) * time.Millisecond }
	n := 10 + r.IntN(70)
	ops := make([]queueOp, 0, n)
	for range n {
		var op queueOp
		switch p := r.IntN(100); {
		case p < 14:
			op = queueOp{verb: "add", key: key()}
		case p < 30:
			op = queueOp{verb: "after", key: key(), d: ms(40)}
			if r.IntN(10) == 0 {
				op.d = -op.d * time.Duration(r.IntN(2)) // 0 or negative
			}
		case p < 38:
			op = queueOp{verb: "ratelimited", key: key()}
		case p < 42:
			op = queueOp{verb: "forget", key: key()}
		case p < 60:
			op = queueOp{verb: "get"}
		case p < 68:
			op = queueOp{verb: "fail"} // the item: the oldest being processed
		case p < 76:
			op = queueOp{verb: "succeed"}
		case p < 90:
			op = queueOp{verb: "step", d: ms(30)}
			if r.IntN(5) == 0 {
				op.d = time.Duration(1+r.IntN(2000)) * time.Second
			}
		case p < 94:
			op = queueOp{verb: "len"}
		case p < 99:
			op = queueOp{verb: "requeues", key: key()}
		default:
			op = queueOp{verb: "shutdown"}
		}
		ops = append(ops, op)
	}
	return ops
}

func describeQueueOps(ops []queueOp) string {
	var b strings.Builder
	for _, op := range ops {
		b.WriteString("  " + op.verb)
		if op.key != "" {
			b.WriteString(" " + op.key)
		}
		if op.d != 0 {
			fmt.Fprintf(&b, " %v", op.d)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sentinel is the item that keeps client-go's waiting loop from running
// out of delayed items; it is never due within a case.
const sentinel = "~sentinel"

func checkQueueOps(ops []queueOp) verdict {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lc := newLoopClock(t0)
	up := cgworkqueue.NewTypedRateLimitingQueueWithConfig[string](
		cgworkqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second),
		cgworkqueue.TypedRateLimitingQueueConfig[string]{Clock: lc})
	fc := clock.NewFake(t0)
	ours := workqueue.New(workqueue.Config[string]{Clock: fc,
		RateLimiter: workqueue.NewExponentialBackoff[string](5*time.Millisecond, 1000*time.Second)})
	defer up.ShutDown()
	defer ours.ShutDown()

	var trace []string
	var processing []string // items handed out and not Done, oldest first
	shutdown, deviated := false, false
	// send runs a request that reaches client-go's waiting loop, then waits
	// for the loop to finish its turn.
	send := func(f func()) {
		f()
		if !shutdown {
			lc.awaitTurn()
		}
	}
	send(func() { up.AddAfter(sentinel, 10000*time.Hour) })
	ours.AddAfter(sentinel, 10000*time.Hour)

	get := func() (string, bool) {
		u, uShut := up.Get()
		o, oShut := ours.Get()
		trace = append(trace, fmt.Sprintf("get: upstream %q %v, ours %q %v", u, uShut, o, oShut))
		if u != o || uShut != oShut {
			return "", false
		}
		if !uShut {
			processing = append(processing, u)
		}
		return u, true
	}
	finish := func(fail bool) {
		k := processing[0]
		processing = processing[1:]
		if fail {
			up.AddRateLimited(k) // the delay reaches the loop unless it is shut down
			if !shutdown {
				lc.awaitTurn()
			}
			ours.AddRateLimited(k)
		} else {
			up.Forget(k)
			ours.Forget(k)
		}
		up.Done(k)
		ours.Done(k)
	}
	bad := func(format string, args ...any) verdict {
		return disagree("%s\ntrace:\n  %s", fmt.Sprintf(format, args...), strings.Join(trace, "\n  "))
	}
	for i, op := range ops {
		lc.step(time.Nanosecond) // never makes a request due: see TestWorkqueue
		fc.Step(time.Nanosecond)
		switch op.verb {
		case "add":
			up.Add(op.key)
			ours.Add(op.key)
		case "after":
			if op.d > 0 {
				send(func() { up.AddAfter(op.key, op.d) })
			} else {
				up.AddAfter(op.key, op.d)
			}
			ours.AddAfter(op.key, op.d)
		case "ratelimited":
			send(func() { up.AddRateLimited(op.key) })
			ours.AddRateLimited(op.key)
		case "forget":
			up.Forget(op.key)
			ours.Forget(op.key)
		case "get":
			if u, o := up.Len(), ours.Len(); u != o {
				return bad("op %d: Len before get: upstream %d, ours %d", i, u, o)
			} else if u == 0 {
				continue // Get would block
			}
			if _, ok := get(); !ok {
				return bad("op %d: Get differs", i)
			}
		case "fail", "succeed":
			if len(processing) > 0 {
				finish(op.verb == "fail")
			}
		case "step":
			lc.step(op.d)
			fc.Step(op.d)
		case "len":
			u, o := up.Len(), ours.Len()
			trace = append(trace, fmt.Sprintf("len: upstream %d, ours %d", u, o))
			if u != o {
				return bad("op %d: Len differs", i)
			}
		case "requeues":
			u, o := up.NumRequeues(op.key), ours.NumRequeues(op.key)
			trace = append(trace, fmt.Sprintf("requeues %s: upstream %d, ours %d", op.key, u, o))
			switch {
			case u != o && shutdown:
				deviated = true
			case u != o:
				return bad("op %d: NumRequeues(%s) differs", i, op.key)
			}
		case "shutdown":
			shutdown = true
			lc.shutDown()
			up.ShutDown()
			ours.ShutDown()
		}
	}
	// Finish what is in flight, hand out what is queued, then both must
	// report shutdown.
	for len(processing) > 0 {
		finish(false)
	}
	shutdown = true
	lc.shutDown()
	up.ShutDown()
	ours.ShutDown()
	for {
		if u, o := up.Len(), ours.Len(); u != o {
			return bad("drain: Len: upstream %d, ours %d", u, o)
		}
		if _, ok := get(); !ok {
			return bad("drain: Get differs")
		}
		if len(processing) == 0 {
			break // both reported shutdown
		}
		finish(false)
	}
	if deviated {
		return knownDeviation(devRateLimitedAfterShutDown)
	}
	return agree()
}

// loopClock is the hand-moved clock of client-go's queue in TestWorkqueue.
// NewTimer is called only by the waiting loop, at the end of each of its
// turns (its heap is never empty): awaitTurn waits for that.
type loopClock struct {
	mu     sync.Mutex
	now    time.Time
	timer  *loopTimer // the loop's latest timer
	turns  chan struct{}
	closed bool // the loop has stopped: no more turns
}

var _ utilclock.WithTicker = (*loopClock)(nil)

func newLoopClock(t time.Time) *loopClock {
	return &loopClock{now: t, turns: make(chan struct{}, 1)}
}

// awaitTurn waits until the loop has finished the turn the caller set off.
func (c *loopClock) awaitTurn() { <-c.turns }

func (c *loopClock) shutDown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

// step moves the clock and, if the loop's timer is due, fires it and
// waits for the loop's turn.
func (c *loopClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	tm := c.timer
	fire := !c.closed && tm != nil && !tm.stopped && !tm.fired && !tm.at.After(c.now)
	if fire {
		tm.fired = true
		tm.ch <- c.now
	}
	c.mu.Unlock()
	if fire {
		c.awaitTurn()
	}
}

func (c *loopClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *loopClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *loopClock) NewTimer(d time.Duration) utilclock.Timer {
	c.mu.Lock()
	tm := &loopTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.timer = tm
	c.mu.Unlock()
	c.turns <- struct{}{}
	return tm
}

// The waiting loop uses none of these; they must not be called.
func (c *loopClock) After(time.Duration) <-chan time.Time { panic("loopClock: After") }
func (c *loopClock) Sleep(time.Duration)                  { panic("loopClock: Sleep") }
func (c *loopClock) Tick(time.Duration) <-chan time.Time  { panic("loopClock: Tick") }

// NewTicker is the heartbeat (and the unfinished-work metrics loop if a
// metrics provider is set): a ticker that never ticks.
func (c *loopClock) NewTicker(time.Duration) utilclock.Ticker { return silentTicker{} }

type silentTicker struct{}

func (silentTicker) C() <-chan time.Time { return nil }
func (silentTicker) Stop()               {}

type loopTimer struct {
	c              *loopClock
	at             time.Time
	ch             chan time.Time
	stopped, fired bool // guarded by c.mu
}

func (t *loopTimer) C() <-chan time.Time { return t.ch }

func (t *loopTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

func (t *loopTimer) Reset(time.Duration) bool { panic("loopTimer: Reset") }
