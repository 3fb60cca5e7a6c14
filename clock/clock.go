package clock

import "time"

// PassiveClock tells the time and nothing else.
type PassiveClock interface {
	// Now returns the current time.
	Now() time.Time
}

// Clock tells the time and makes timers. Implementations must be safe for
// concurrent use.
type Clock interface {
	PassiveClock
	// NewTimer returns a timer that sends the current time on its channel
	// once d has elapsed. A d ≤ 0 fires immediately.
	NewTimer(d time.Duration) Timer
	// AfterFunc returns a timer that calls f once d has elapsed, as
	// [time.AfterFunc] does. Its C method returns nil. On a [Fake], f is
	// tracked work (see [Source]): virtual time does not move on while f
	// runs, and whatever f hands to other goroutines is accounted for
	// before f returns. f must not block for long.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of [time.Timer] this library uses.
type Timer interface {
	// C returns the channel the firing time is sent on; nil for a timer
	// made by AfterFunc. It has a buffer of one, so a timer that fires
	// while nobody reads does not block the clock.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped it (false if it had already fired or been stopped). For a
	// timer made by AfterFunc, false means f has run, is running or is
	// about to run.
	Stop() bool
}

// Real is the wall clock. Its zero value is ready to use.
type Real struct{}

var _ Clock = Real{}

// Now returns [time.Now].
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps [time.NewTimer].
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc wraps [time.AfterFunc]: f runs on its own goroutine.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// OrReal returns c, or [Real] when c is nil. Config structs use it to
// implement "nil means the real clock".
func OrReal(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}
