package clock

import (
	"sync"
	"sync/atomic"
)

// Fork calls f(0), …, f(n-1) concurrently and returns when every call has
// returned: a fork and join, such as a controller's batch of writes
// (upstream's slow-start batches of pod creations). On a [Fake] the calls
// are tracked work, so that virtual time stays exact while they sleep in
// requests with latency, and the caller, which must be doing tracked work
// itself, counts as idle while it waits (as in [Sleep]):
//
//   - on a clock from [NewFake], the calls run at once, each on a
//     goroutine of its own;
//   - on a clock from [NewInterleaved] or [NewReplay], each call runs in
//     a turn of its own, in an order the interleaving chooses (any order:
//     the calls are independent of each other), and the caller goes on in
//     a turn of its own once the last one has returned;
//   - on a clock from [NewDeterministic], the calls run one after
//     another, in order, on the caller's goroutine, in the caller's turn:
//     the oldest-first order of that clock stays what it was.
//
// On other clocks the calls run on goroutines, untracked.
func Fork(c Clock, n int, f func(i int)) {
	if n <= 0 {
		return
	}
	fc, ok := c.(*Fake)
	switch {
	case ok && fc.serial && fc.order == nil:
		for i := range n {
			f(i)
		}
	case ok && fc.serial:
		fc.forkTurns(n, f)
	case ok:
		fc.forkNow(n, f)
	default:
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { f(i) })
		}
		wg.Wait()
	}
}

// forkSourceLocked returns the source of forked calls, made on first use:
// its units are independent, so an interleaving may run them in any order.
func (f *Fake) forkSourceLocked() *Source {
	if f.forkSrc == nil {
		f.forkSrc = &Source{f: f, name: "clock: forked call", anyOrder: true}
	}
	return f.forkSrc
}

// forkNow is Fork on a concurrent clock. The last call to return makes the
// caller busy again before its own work ends, so that the count of work
// never drops to zero between them.
func (f *Fake) forkNow(n int, fn func(i int)) {
	var left atomic.Int64
	left.Store(int64(n))
	done := make(chan struct{})
	f.mu.Lock()
	src := f.forkSourceLocked()
	for range n {
		f.startLocked(src)
	}
	f.running-- // the caller waits: its work is the calls' now
	f.mu.Unlock()
	for i := range n {
		go func() {
			fn(i)
			f.mu.Lock()
			if left.Add(-1) == 0 {
				f.running++ // the caller goes on
				close(done)
			}
			f.doneLocked(src)
			f.mu.Unlock()
		}()
	}
	<-done
}

// forkTurns is Fork on an interleaving clock: each call is a unit of work
// waiting for its turn; the caller gives up its own, and the last call
// to return hands the caller's continuation over as one more unit, before
// its own work ends.
func (f *Fake) forkTurns(n int, fn func(i int)) {
	var left atomic.Int64
	left.Store(int64(n))
	resume := make(chan struct{})
	f.mu.Lock()
	src := f.forkSourceLocked()
	cont := f.yieldSourceLocked()
	for i := range n {
		f.holdLocked(src, func() {
			go func() {
				fn(i)
				f.mu.Lock()
				if left.Add(-1) == 0 {
					f.holdLocked(cont, func() { close(resume) })
				}
				f.doneLocked(src)
				f.mu.Unlock()
			}()
		})
	}
	f.running-- // the caller's turn ends: its work is the calls' now
	f.progress++
	f.cond.Broadcast()
	f.mu.Unlock()
	<-resume
	// The continuation's turn is the caller's work again (as in Yield).
	f.mu.Lock()
	f.progress++
	f.countLocked(cont, -1)
	f.mu.Unlock()
}
