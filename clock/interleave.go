package clock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Interleaving configures a clock from [NewInterleaved]: a deterministic
// clock that does not always give the turn to the oldest work waiting, so
// that one seed explores one of the orders in which the work of an
// instant could have run concurrently; [NewReplay] replays the
// [Schedule] it took. The zero value draws from seed 0 at a rate drawn
// from it.
type Interleaving struct {
	// Seed draws the choices.
	Seed uint64
	// Rate is the share of the turns with a choice (more than one unit of
	// work may go) that depart from the oldest-first order, in [0, 1]; 0
	// draws it from Seed among 2%, 10%, 30% and 100%, so that some seeds
	// reorder a little and others a lot.
	Rate float64
}

// Schedule is the order in which a clock from [NewInterleaved] gave work
// its turns, as the turns that departed from the oldest-first order of
// [NewDeterministic]: at turn Step (the Step-th unit of work given its
// turn, from 1), the unit of index Index among those that could go,
// oldest first, went (0, the oldest, is never listed). Its String form,
// "12:1,40:3", is what [ParseSchedule] reads.
type Schedule []Turn

// Turn is one entry of a [Schedule].
type Turn struct {
	Step  uint64
	Index int
}

func (t Turn) String() string { return fmt.Sprintf("%d:%d", t.Step, t.Index) }

// String returns the form ParseSchedule reads: "12:1,40:3", or "" for the
// oldest-first order.
func (s Schedule) String() string {
	var b strings.Builder
	for i, t := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(t.Step, 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(t.Index))
	}
	return b.String()
}

// ParseSchedule reads a Schedule in the form its String method writes:
// step:index pairs, steps from 1 in increasing order, indexes from 1.
func ParseSchedule(text string) (Schedule, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	var out Schedule
	for _, part := range strings.Split(text, ",") {
		step, index, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("clock: schedule: %q is not step:index", part)
		}
		n, err := strconv.ParseUint(step, 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("clock: schedule: step %q is not a number from 1", step)
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < 1 {
			return nil, fmt.Errorf("clock: schedule: index %q at step %d is not a number from 1", index, n)
		}
		if len(out) > 0 && out[len(out)-1].Step >= n {
			return nil, fmt.Errorf("clock: schedule: step %d does not come after step %d", n, out[len(out)-1].Step)
		}
		out = append(out, Turn{Step: n, Index: i})
	}
	return out, nil
}

// NewInterleaved returns a deterministic clock (see [NewDeterministic]:
// tracked work runs one unit at a time, in turns, and only in
// [Fake.Settle]) that gives the turn, each time more than one unit of
// work could go, to one drawn from il.Seed. [Fake.Schedule] returns the
// choices made, and [NewReplay] takes them again.
//
// Not every waiting unit may go: the units of one [Source] go in the
// order they were handed over (a watch delivers its events in order, a
// work queue hands out its items first in, first out), so a choice is
// among the oldest unit of each source, and any fired timer callback
// (callbacks due at one instant may run in any order). What one
// interleaving explores is which component moves first: a handler
// before another, a worker's sync before the watch event that would have
// changed its cache, a latency that ends before another.
func NewInterleaved(t time.Time, il Interleaving) *Fake {
	f := newFake(t, true)
	f.order = newInterleaver(il)
	return f
}

// NewReplay returns a clock like those of [NewInterleaved] that takes the
// turns of a recorded [Schedule] (s, from [Fake.Schedule]) instead of
// drawing them: the same program with the same inputs then does exactly
// what it did when s was recorded. A nil s replays the oldest-first order
// of [NewDeterministic]. An index beyond the units that may go at its
// turn (a schedule recorded on a changed program) wraps around.
func NewReplay(t time.Time, s Schedule) *Fake {
	f := newFake(t, true)
	f.order = &interleaver{lanes: map[*Source]bool{}, fixed: make(map[uint64]int, len(s))}
	for _, turn := range s {
		f.order.fixed[turn.Step] = turn.Index
	}
	return f
}

// Schedule returns the turns so far that departed from the oldest-first
// order, for [NewReplay]; nil on other clocks than those of
// [NewInterleaved] and NewReplay.
func (f *Fake) Schedule() Schedule {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.order == nil {
		return nil
	}
	return append(Schedule(nil), f.order.made...)
}

// Turns returns the number of turns given so far on a deterministic
// clock (0 on others): the steps a [Schedule] counts.
func (f *Fake) Turns() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.turns
}

// interleaver picks the unit of work that goes next on a clock from
// NewInterleaved, and records its choices. Guarded by Fake.mu.
type interleaver struct {
	rnd   *rand.Rand // nil when replaying
	rate  float64
	fixed map[uint64]int // replay: the index of each step listed
	made  Schedule
	// scratch
	cands []int
	lanes map[*Source]bool
}

// interleaveRates are the rates a zero Interleaving.Rate is drawn from.
var interleaveRates = [...]float64{0.02, 0.1, 0.3, 1}

func newInterleaver(il Interleaving) *interleaver {
	o := &interleaver{lanes: map[*Source]bool{}}
	o.rnd = rand.New(rand.NewPCG(il.Seed, 0x696e7465726c)) // "interl": apart from a program's other streams
	o.rate = il.Rate
	if o.rate <= 0 {
		o.rate = interleaveRates[o.rnd.IntN(len(interleaveRates))]
	}
	return o
}

// choose returns the index of the unit among n candidates (oldest first)
// that goes at turn step.
func (o *interleaver) choose(step uint64, n int) int {
	if n < 2 {
		return 0
	}
	i := 0
	switch {
	case o.rnd == nil:
		i = o.fixed[step] % n
	case o.rnd.Float64() < o.rate:
		i = 1 + o.rnd.IntN(n-1)
	}
	if i != 0 {
		o.made = append(o.made, Turn{Step: step, Index: i})
	}
	return i
}

// popChosenLocked gives its turn to the waiting unit the interleaver
// chooses among those that may go (the oldest of each source, and every
// timer callback), and returns it; nil if none waits.
func (f *Fake) popChosenLocked() *held {
	o := f.order
	// Drop the units withdrawn or given their turn, keeping the order.
	live := f.held[:0]
	for _, h := range f.held {
		if h.state == heldWaiting {
			live = append(live, h)
		}
	}
	clear(f.held[len(live):])
	f.held = live
	if len(live) == 0 {
		f.held = nil
		return nil
	}
	o.cands = o.cands[:0]
	clear(o.lanes)
	for i, h := range live {
		switch {
		case h.s.anyOrder:
			o.cands = append(o.cands, i)
		case !o.lanes[h.s]:
			o.lanes[h.s] = true
			o.cands = append(o.cands, i)
		}
	}
	f.turns++
	at := o.cands[o.choose(f.turns, len(o.cands))]
	h := live[at]
	f.held = slices.Delete(live, at, at+1)
	h.state = heldReleased
	f.nheld--
	f.running++
	return h
}

// Yield gives up the caller's turn on a clock from [NewInterleaved] or
// [NewReplay], so that other work waiting at this instant may go first,
// and returns when the caller's turn comes again (its continuation is one
// more unit of work the interleaving places); elsewhere it returns at
// once. A request to a simulated API server is such a point: it calls
// Yield before it is served, so that an interleaving can serve another
// goroutine's request, or deliver a watch event, in between two requests
// of one sync. It returns ctx's error, without waiting for its turn, if
// ctx ends first.
//
// Like [Sleep], it must be called only by a goroutine doing tracked work
// (a worker handling a queue item, say): a goroutine outside the
// simulation (a test between two [Fake.RunUntil] calls) has no turn to
// give up.
func Yield(ctx context.Context, c Clock) error {
	f, ok := c.(*Fake)
	if !ok || f.order == nil {
		return ctx.Err()
	}
	wake := make(chan struct{})
	f.mu.Lock()
	src := f.yieldSourceLocked()
	h := f.holdLocked(src, func() { close(wake) })
	f.running-- // the caller's work waits: it is h now
	f.progress++
	f.cond.Broadcast()
	f.mu.Unlock()
	select {
	case <-wake:
	case <-ctx.Done():
		f.mu.Lock()
		if h.state == heldWaiting {
			f.cancelLocked(h)
			f.running++ // the caller's work goes on, outside its turn
			f.mu.Unlock()
			return ctx.Err()
		}
		f.mu.Unlock()
		<-wake // its turn came meanwhile
	}
	// The turn of h is the caller's work again: it keeps h's count in
	// running and leaves the source.
	f.mu.Lock()
	f.progress++
	f.countLocked(src, -1)
	f.mu.Unlock()
	return nil
}

// yieldSourceLocked returns the source of the continuations of Yield and
// Fork, made on first use: each is one goroutine's, independent of the
// others.
func (f *Fake) yieldSourceLocked() *Source {
	if f.yieldSrc == nil {
		f.yieldSrc = &Source{f: f, name: "clock: continuation", anyOrder: true}
	}
	return f.yieldSrc
}
