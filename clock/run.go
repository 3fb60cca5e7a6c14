package clock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors returned by [Fake.RunUntil].
var (
	// ErrStalled means the condition does not hold, no tracked work is
	// left and no timer is pending: nothing will ever happen again.
	ErrStalled = errors.New("clock: stalled: condition not met, no work left and no timer pending")
	// ErrTimeLimit means the next timer lies beyond the virtual time limit.
	ErrTimeLimit = errors.New("clock: virtual time limit reached")
)

// Settle lets the work tracked on f finish at the current instant: it
// returns nil once no work is running and none waits for its turn. On a
// deterministic clock it gives the waiting work its turns, one at a time,
// oldest first, on the calling goroutine; otherwise it only waits. Time
// does not move.
//
// Settle has no timeout: work that never finishes (a queue without
// workers, a watch nobody reads) keeps it waiting until ctx ends. It then
// returns ctx's error together with a description of the unfinished work
// (see [Fake.Busy]).
func (f *Fake) Settle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	for {
		for f.running > 0 && ctx.Err() == nil {
			f.cond.Wait()
		}
		if err := ctx.Err(); err != nil {
			busy := f.busyLocked()
			f.mu.Unlock()
			if busy == "" {
				return err
			}
			return fmt.Errorf("clock: settle: %w; unfinished work: %s", err, busy)
		}
		h := f.popHeldLocked()
		if h == nil {
			f.mu.Unlock()
			return nil
		}
		f.mu.Unlock()
		if h.release != nil {
			h.release()
		}
		f.mu.Lock()
	}
}

// RunUntil runs a simulation until cond holds. It repeats two steps: let
// the tracked work of the current instant finish ([Fake.Settle]), then, if
// cond is still false, move the clock to the earliest pending timer, which
// wakes whatever waits for it. So time moves only when nothing can happen
// any more at the current instant: a fact the components report through
// [Source], not a guess from wall-clock time, and the same however busy
// the machine is.
//
// It returns nil once cond holds, [ErrTimeLimit] when the next timer lies
// more than maxVirtual past the start, [ErrStalled] at once when no work
// is left and no timer is pending, or Settle's error when ctx ends first.
// cond is called only between instants, with no tracked work running.
func (f *Fake) RunUntil(ctx context.Context, cond func() bool, maxVirtual time.Duration) error {
	limit := f.Now().Add(maxVirtual)
	for {
		if err := f.Settle(ctx); err != nil {
			return err
		}
		if cond() {
			return nil
		}
		next, ok := f.NextDeadline()
		if !ok {
			return ErrStalled
		}
		if next.After(limit) {
			return fmt.Errorf("%w (%v)", ErrTimeLimit, maxVirtual)
		}
		f.SetTime(next)
	}
}
