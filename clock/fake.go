package clock

import (
	"slices"
	"sync"
	"time"
)

// Fake is a clock whose time moves only when told to, and the scheduler of
// the work that components running on it hand to each other (see
// [Source]). It is safe for concurrent use. Create it with [NewFake] or
// [NewDeterministic].
//
// Time moves with [Fake.Step] and [Fake.SetTime], which fire every timer
// that is then due, or with [Fake.RunUntil], which moves it only when no
// tracked work is left at the current instant.
type Fake struct {
	mu   sync.Mutex
	cond sync.Cond // L is &mu; broadcast when running drops to zero or work is held

	now    time.Time
	timers []*fakeTimer // pending, in no particular order
	nextID uint64       // creation order of timers: equal deadlines fire in it

	// Work accounting; see work.go.
	serial   bool
	running  int     // units of work started (or released) and not Done
	sleeping int     // goroutines in Sleep
	held     []*held // serial mode: work waiting for its turn, oldest first
	nheld    int     // entries of held still waiting
	active   map[*Source]struct{}
	timerSrc *Source      // the work of AfterFunc callbacks
	progress uint64       // counts work started and finished: Settle's watchdog
	turns    uint64       // serial mode: turns given so far
	order    *interleaver // NewInterleaved: picks the next turn; nil: oldest first
	yieldSrc *Source      // the continuations of Yield and Fork; made on first use
	forkSrc  *Source      // the calls of Fork; made on first use
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock that reads t until it is moved. Work tracked
// on it (see [Source]) runs as soon as it is handed over, concurrently;
// [Fake.RunUntil] and [Fake.Settle] wait for all of it before time moves.
func NewFake(t time.Time) *Fake { return newFake(t, false) }

// NewDeterministic returns a fake clock that also serialises tracked work:
// every piece of work waits for its turn and runs alone, in the order it
// was handed over, and timers due at the same instant fire in the order
// they were made. A simulation whose goroutines hand work to each other
// only through tracked components (this library's work queues, informers,
// watches and kubelet, or your own through [Source]) then does exactly the
// same thing run after run, however busy the machine: same seed, same
// trace.
//
// Nothing runs until it is given its turn by [Fake.Settle] or
// [Fake.RunUntil] (which calls Settle): on this clock, drive the system
// through them, not by waiting on channels.
func NewDeterministic(t time.Time) *Fake { return newFake(t, true) }

func newFake(t time.Time, serial bool) *Fake {
	f := &Fake{now: t, serial: serial, active: map[*Source]struct{}{}}
	f.cond.L = &f.mu
	// Callbacks due at one instant are independent of each other: an
	// interleaving may run them in any order.
	f.timerSrc = &Source{f: f, name: "clock: timer callback", anyOrder: true}
	return f
}

// Deterministic reports whether f serialises tracked work (it was made by
// [NewDeterministic]). Shells that could run parts of one piece of work in
// parallel (slow-start pod creation) run them one after another instead.
func (f *Fake) Deterministic() bool { return f.serial }

// IsDeterministic reports whether c is a [Fake] made by [NewDeterministic].
func IsDeterministic(c PassiveClock) bool {
	f, ok := c.(*Fake)
	return ok && f != nil && f.serial
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer returns a timer that fires when the fake time reaches now+d.
// Its firing is not tracked work: a goroutine that wakes on it runs
// outside the accounting, so components that must keep virtual time exact
// use [Fake.AfterFunc] or [Sleep] instead.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.newTimerLocked(d, nil)
	if d <= 0 {
		t.state = timerFired
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	return t
}

// AfterFunc returns a timer that runs fn when the fake time reaches now+d.
//
// When time moves (Step, SetTime, RunUntil), due callbacks run one after
// another in order of deadline, then creation, on the goroutine that moved
// the clock, before that call returns; on a deterministic clock they wait
// for their turn in [Fake.Settle] instead. A d ≤ 0 runs fn as soon as
// possible: on a new goroutine, or in its turn. Either way fn is tracked
// work: nothing is idle while it runs.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	t := f.newTimerLocked(d, fn)
	if d > 0 {
		f.timers = append(f.timers, t)
		f.mu.Unlock()
		return t
	}
	t.state = timerFired
	f.mu.Unlock()
	f.fire([]*fakeTimer{t}, true)
	return t
}

func (f *Fake) newTimerLocked(d time.Duration, fn func()) *fakeTimer {
	f.nextID++
	t := &fakeTimer{f: f, at: f.now.Add(d), id: f.nextID, fn: fn}
	if fn == nil {
		t.c = make(chan time.Time, 1)
	}
	return t
}

// Step moves the fake time forward by d and fires every timer that is due,
// earliest first.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	f.setLocked(f.now.Add(d))
}

// SetTime moves the fake time to t (which may be earlier than now; no timer
// fires then) and fires every timer that is due.
func (f *Fake) SetTime(t time.Time) {
	f.mu.Lock()
	f.setLocked(t)
}

// Waiters returns the number of timers that have not yet fired or been
// stopped.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NextDeadline returns the earliest deadline of a pending timer, and false
// when none is pending. Simulations use it to jump straight to the next
// moment anything happens.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	min := f.timers[0].at
	for _, t := range f.timers[1:] {
		if t.at.Before(min) {
			min = t.at
		}
	}
	return min, true
}

// setLocked moves the time to t and fires what is due. It is called with
// f.mu held and releases it.
func (f *Fake) setLocked(t time.Time) {
	f.now = t
	var due []*fakeTimer
	f.timers = slices.DeleteFunc(f.timers, func(w *fakeTimer) bool {
		if w.at.After(t) {
			return false
		}
		due = append(due, w)
		return true
	})
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return compareID(a.id, b.id)
	})
	var funcs []*fakeTimer
	for _, w := range due {
		w.state = timerFired
		if w.fn == nil {
			w.c <- t
			continue
		}
		funcs = append(funcs, w)
	}
	f.mu.Unlock()
	f.fire(funcs, false)
}

func compareID(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fire runs the callbacks of fired func timers as tracked work: in their
// turn on a deterministic clock, otherwise now (on this goroutine, or on a
// new one when async is set). f.mu is not held.
func (f *Fake) fire(ts []*fakeTimer, async bool) {
	if len(ts) == 0 {
		return
	}
	if f.serial {
		for _, t := range ts {
			f.mu.Lock()
			if t.state == timerFired { // not stopped meanwhile
				t.work = f.holdLocked(f.timerSrc, t.run)
			}
			f.mu.Unlock()
		}
		return
	}
	f.mu.Lock()
	for range ts {
		f.startLocked(f.timerSrc)
	}
	f.mu.Unlock()
	run := func() {
		for _, t := range ts {
			t.fn()
			Work{s: f.timerSrc}.Done()
		}
	}
	if async {
		go run()
		return
	}
	run()
}

type timerState uint8

const (
	timerPending timerState = iota
	timerFired
	timerStopped
)

type fakeTimer struct {
	f     *Fake
	at    time.Time
	id    uint64
	c     chan time.Time // nil for AfterFunc timers
	fn    func()
	state timerState // guarded by f.mu
	work  *held      // deterministic clocks: the turn of a fired callback
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// run is the release of a fired callback's turn: it runs the callback and
// ends the turn.
func (t *fakeTimer) run() {
	t.fn()
	Work{s: t.f.timerSrc}.Done()
}

func (t *fakeTimer) Stop() bool {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch t.state {
	case timerPending:
		t.state = timerStopped
		f.timers = slices.DeleteFunc(f.timers, func(w *fakeTimer) bool { return w == t })
		return true
	case timerFired:
		if t.work != nil && t.work.state == heldWaiting {
			// Fired on a deterministic clock, but its turn has not come:
			// the callback has not started, and now never will.
			t.state = timerStopped
			f.cancelLocked(t.work)
			return true
		}
	}
	return false
}
