package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock whose time moves only when told to. It is safe for
// concurrent use. Create it with [NewFake].
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock that reads t until it is stepped.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		t.fired = true
		return t
	}
	f.waiters = append(f.waiters, t)
	return t
}

// Step moves the fake time forward by d and fires every timer that is due,
// earliest first.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// SetTime moves the fake time to t (which may be earlier than now; no timer
// fires then) and fires every timer that is due.
func (f *Fake) SetTime(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

// Waiters returns the number of timers that have not yet fired or been
// stopped. Tests use it to wait until a goroutine is blocked on the clock
// before stepping it.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// NextDeadline returns the earliest deadline of a pending timer, and false
// when none is pending. Simulations use it to jump straight to the next
// moment anything happens.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiters) == 0 {
		return time.Time{}, false
	}
	min := f.waiters[0].at
	for _, w := range f.waiters[1:] {
		if w.at.Before(min) {
			min = w.at
		}
	}
	return min, true
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	var due, keep []*fakeTimer
	for _, w := range f.waiters {
		if !w.at.After(t) {
			due = append(due, w)
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, w := range due {
		w.fired = true
		w.c <- t
	}
}

type fakeTimer struct {
	f     *Fake
	at    time.Time
	c     chan time.Time
	fired bool // guarded by f.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, w := range t.f.waiters {
		if w == t {
			t.f.waiters = append(t.f.waiters[:i], t.f.waiters[i+1:]...)
			t.fired = true
			return true
		}
	}
	return false
}
