package clock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Source is a component that hands work from one goroutine to another: a
// work queue handing items to workers, a watch handing events to an
// informer, an informer handing notifications to handlers. Telling the
// clock about every such hand-off is what lets a [Fake] know, as a fact
// rather than a guess, that nothing can happen at the current instant
// any more, so that virtual time may move on.
//
// The protocol has two calls, one on each side of the hand-off:
//
//   - The producer calls [Source.Start] when the work becomes ready (an
//     item is queued, an event is buffered), before it returns to its own
//     caller.
//   - The consumer calls [Work.Done] when it has finished the work,
//     after it has started (with Start) whatever it handed on in turn.
//
// So the count of unfinished work never drops to zero between two steps
// of one chain of causes, and when it is zero only a timer can create new
// work. A goroutine that must wait in the middle of its work uses [Sleep].
//
// A nil *Source is valid and tracks nothing: [NewSource] returns nil for
// clocks that keep no account ([Real]), so components call the same
// methods whatever their clock.
type Source struct {
	f    *Fake
	name string
	n    int // unfinished work of this source; guarded by f.mu
	// idle marks a source whose component must run for its work to
	// finish and has not started; guarded by f.mu. See Source.Expect.
	idle bool
	// anyOrder marks a source whose units are independent of each other:
	// a clock from NewInterleaved may give them their turns in any order
	// (the units of other sources go in the order they were handed over).
	anyOrder bool
}

// Expect records that the work of s can only finish once its component
// runs (its Run method has been called): an informer's first list, a
// kubelet's pods, a queue's items. Until [Source.Running] says it does,
// a [Fake.Settle] (and so [Fake.RunUntil]) that has nothing else to wait
// for returns [ErrNotRunning] naming s, after a short grace of wall time
// ([NotRunningGrace]) for a goroutine that is about to start it, instead
// of waiting forever.
func (s *Source) Expect() {
	if s == nil {
		return
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.idle = true
}

// Running records that the component of s runs; see [Source.Expect].
func (s *Source) Running() {
	if s == nil {
		return
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.idle {
		s.idle = false
		s.f.progress++
		s.f.cond.Broadcast()
	}
}

// NewSource returns a source of work named name (it appears in
// diagnostics, such as an error from [Fake.Settle]) on c, or nil when c is
// not a *[Fake].
func NewSource(c Clock, name string) *Source {
	f, ok := c.(*Fake)
	if !ok || f == nil {
		return nil
	}
	return &Source{f: f, name: name}
}

// Work is one unit of work handed over by a [Source]. Its zero value is
// valid, and its Done does nothing.
type Work struct {
	s *Source
	h *held // deterministic clocks: the turn, until it is given
}

// Start records that a unit of work is ready to be done by another
// goroutine.
//
// release is what makes the work visible to its consumer (marking an item
// gettable and signalling the waiting worker, say). Start never calls it:
// when now is true (a nil Source, or a clock that runs work concurrently)
// the producer makes the work visible itself, at once, typically with the
// lock release would take already held. When now is false (a
// deterministic clock), the clock calls release later, with no lock held,
// when it is this work's turn; until then the work must stay invisible to
// its consumer. release must not block.
func (s *Source) Start(release func()) (w Work, now bool) {
	if s == nil {
		return Work{}, true
	}
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.serial {
		f.startLocked(s)
		return Work{s: s}, true
	}
	return Work{s: s, h: f.holdLocked(s, release)}, false
}

// Begin records a unit of work that the calling goroutine starts at once
// and does itself. Call it only from a goroutine that is doing tracked
// work already and hands its own work on to itself (it takes new work
// before finishing the old), never to start work on another goroutine:
// that is what Start is for.
func (s *Source) Begin() Work {
	if s == nil {
		return Work{}
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.startLocked(s)
	return Work{s: s}
}

// Done records that the work is finished. For work whose turn has not
// come yet on a deterministic clock, it withdraws the work instead (its
// release will never be called): a component that discards work (a queue
// shutting down, a watch stopped) calls Done for it. Each unit needs
// exactly one Done.
func (w Work) Done() {
	s := w.s
	if s == nil {
		return
	}
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.h != nil && w.h.state == heldWaiting {
		f.cancelLocked(w.h)
		return
	}
	f.doneLocked(s)
}

// Pending reports whether the work has not been given its turn yet (only
// on a deterministic clock). A consumer must not see such work.
func (w Work) Pending() bool {
	if w.h == nil {
		return false
	}
	f := w.s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	return w.h.state == heldWaiting
}

type heldState uint8

const (
	heldWaiting heldState = iota
	heldReleased
	heldCancelled
)

// held is a unit of work waiting for its turn on a deterministic clock.
type held struct {
	s       *Source
	release func()
	state   heldState // guarded by s.f.mu
}

func (f *Fake) startLocked(s *Source) {
	f.progress++
	f.running++
	f.countLocked(s, 1)
}

func (f *Fake) holdLocked(s *Source, release func()) *held {
	h := &held{s: s, release: release}
	f.held = append(f.held, h)
	f.nheld++
	f.countLocked(s, 1)
	f.cond.Broadcast()
	return h
}

func (f *Fake) cancelLocked(h *held) {
	h.state = heldCancelled
	f.nheld--
	f.countLocked(h.s, -1)
	f.cond.Broadcast()
}

func (f *Fake) doneLocked(s *Source) {
	f.progress++
	f.running--
	f.countLocked(s, -1)
	if f.running <= 0 {
		f.cond.Broadcast()
	}
}

func (f *Fake) countLocked(s *Source, d int) {
	s.n += d
	switch {
	case s.n < 0:
		panic(fmt.Sprintf("clock: Work.Done called more often than work was started by %q", s.name))
	case s.n == 0:
		delete(f.active, s)
	case s.n == d:
		f.active[s] = struct{}{}
	}
}

// popHeldLocked gives the oldest waiting work its turn and returns it, or
// nil if none waits.
func (f *Fake) popHeldLocked() *held {
	for len(f.held) > 0 {
		h := f.held[0]
		f.held[0] = nil
		f.held = f.held[1:]
		if h.state != heldWaiting {
			continue
		}
		h.state = heldReleased
		f.nheld--
		f.running++
		f.turns++
		return h
	}
	f.held = nil // let the backing array go
	return nil
}

// Sleep pauses the calling goroutine until d has passed on c or ctx ends,
// and returns ctx.Err() in the latter case.
//
// On a [Fake] the caller must be doing tracked work (a worker handling a
// queue item, say): while it sleeps it counts as idle, so that time can
// move on to wake it, and it counts as busy again once it wakes. On a
// deterministic clock it then waits for its turn, like any other work.
// On other clocks Sleep waits on [Clock.NewTimer].
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	f, ok := c.(*Fake)
	if !ok {
		if d <= 0 {
			return ctx.Err()
		}
		t := c.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
			return nil
		}
	}
	if d <= 0 {
		return ctx.Err()
	}
	wake := make(chan struct{})
	awake := func() {
		f.mu.Lock()
		f.running++
		f.sleeping--
		f.mu.Unlock()
	}
	// The timer first, then idle: time cannot move (the caller's work
	// still counts) until the timer that will wake the caller is set.
	t := f.AfterFunc(d, func() {
		awake()
		close(wake)
	})
	f.mu.Lock()
	f.running--
	f.sleeping++
	f.cond.Broadcast()
	f.mu.Unlock()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		if t.Stop() {
			awake()
		} else {
			<-wake
		}
		return ctx.Err()
	}
}

// Busy describes the work tracked on f that is not finished: how many
// units are running, waiting for their turn or sleeping, and which
// sources they come from. It returns "" when there is none.
func (f *Fake) Busy() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busyLocked()
}

// notRunningLocked names the sources with unfinished work whose component
// has not started, sorted; nil when there is none.
func (f *Fake) notRunningLocked() []string {
	var names []string
	for s := range f.active {
		if s.idle {
			names = append(names, s.name)
		}
	}
	slices.Sort(names)
	return names
}

func (f *Fake) busyLocked() string {
	if f.running == 0 && f.nheld == 0 && f.sleeping == 0 {
		return ""
	}
	srcs := make([]string, 0, len(f.active))
	for s := range f.active {
		srcs = append(srcs, fmt.Sprintf("%s ×%d", s.name, s.n))
	}
	slices.Sort(srcs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d running, %d waiting for their turn, %d sleeping", f.running, f.nheld, f.sleeping)
	if len(srcs) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(srcs, ", "))
	}
	return b.String()
}
