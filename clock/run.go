package clock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors returned by [Fake.RunUntil].
var (
	// ErrStalled means the condition does not hold, no tracked work is
	// left and no timer is pending: nothing will ever happen again.
	ErrStalled = errors.New("clock: stalled: condition not met, no work left and no timer pending")
	// ErrTimeLimit means the next timer lies beyond the virtual time limit.
	ErrTimeLimit = errors.New("clock: virtual time limit reached")
	// ErrNotRunning means tracked work waits for a component that was
	// built but never started (see [Source.Expect]): nothing will happen
	// until it runs.
	ErrNotRunning = errors.New("clock: work waits for a component that was never started")
	// ErrNoProgress means tracked work has not moved for [NoProgressLimit]
	// of wall time: it waits for something outside the simulation (a
	// goroutine not on the clock, a channel nobody reads).
	ErrNoProgress = errors.New("clock: no tracked work started or finished")
)

// NotRunningGrace is how long (wall time) [Fake.Settle] waits for a
// component that has work waiting and was never started, in case the
// goroutine that starts it has not run yet, before it returns
// [ErrNotRunning].
const NotRunningGrace = time.Second

// NoProgressLimit is how long (wall time) [Fake.Settle] waits while
// tracked work is unfinished and none starts or finishes, before it
// returns [ErrNoProgress]: its bound when nothing else ends the wait.
const NoProgressLimit = time.Minute

// Settle lets the work tracked on f finish at the current instant: it
// returns nil once no work is running and none waits for its turn. On a
// deterministic clock it gives the waiting work its turns, one at a time,
// oldest first, on the calling goroutine; otherwise it only waits. Time
// does not move.
//
// Work that never finishes does not keep it waiting forever: work of a
// component that was built but never started (an informer whose Run was
// not called, see [Source.Expect]) makes it return [ErrNotRunning], naming
// the component, after [NotRunningGrace]; work that neither starts nor
// finishes for [NoProgressLimit] makes it return [ErrNoProgress]; and
// when ctx ends first it returns ctx's error. Each error comes with a
// description of the unfinished work (see [Fake.Busy]).
func (f *Fake) Settle(ctx context.Context) error {
	wake := func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, wake)
	defer stop()
	tick := time.AfterFunc(NotRunningGrace/4, wake)
	defer tick.Stop()
	f.mu.Lock()
	seen, since := f.progress, time.Now()
	for {
		for f.running > 0 && ctx.Err() == nil {
			if f.progress != seen {
				seen, since = f.progress, time.Now()
			}
			stuck := time.Since(since)
			if names := f.notRunningLocked(); len(names) > 0 && stuck >= NotRunningGrace {
				busy := f.busyLocked()
				f.mu.Unlock()
				return fmt.Errorf("%w: %s; unfinished work: %s", ErrNotRunning, strings.Join(names, ", "), busy)
			}
			if stuck >= NoProgressLimit {
				busy := f.busyLocked()
				f.mu.Unlock()
				return fmt.Errorf("%w for %v; unfinished work: %s", ErrNoProgress, NoProgressLimit, busy)
			}
			tick.Reset(NotRunningGrace / 4)
			f.cond.Wait()
		}
		if err := ctx.Err(); err != nil {
			busy, idle := f.busyLocked(), f.notRunningLocked()
			f.mu.Unlock()
			switch {
			case busy == "":
				return err
			case len(idle) > 0:
				return fmt.Errorf("clock: settle: %w; never started: %s; unfinished work: %s", err, strings.Join(idle, ", "), busy)
			}
			return fmt.Errorf("clock: settle: %w; unfinished work: %s", err, busy)
		}
		var h *held
		if f.order != nil {
			h = f.popChosenLocked()
		} else {
			h = f.popHeldLocked()
		}
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
// is left and no timer is pending, or Settle's error ([ErrNotRunning],
// [ErrNoProgress], or ctx's) when the work of an instant cannot finish.
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
