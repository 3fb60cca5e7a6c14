package clustertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// A Schedule is the order in which a bench let its steps through, as the
// choices that differ from the canonical order: at step Step (the Step-th
// step the bench let through, from 1), the step of index Index among those
// ready, sorted in the canonical order (0 is the canonical step, and is
// never listed). With the same Options (the seed above all) and the same
// test, a Schedule replays the bench exactly: see [Options.Schedule].
//
// Any choice is one Kubernetes allows: the steps ready at an instant are
// requests in flight from different goroutines (a client's concurrent
// requests, which a real API server may serve in any order; a goroutine's
// own requests are never both ready) and watch events on their way to
// different watches (a watch has one event ready at a time, so each watch
// keeps its order).
type Schedule []Choice

// Choice is one entry of a [Schedule].
type Choice struct {
	Step  uint64
	Index int
}

// String is the form ParseSchedule reads: "12:1,40:2", or "" for the
// canonical order.
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = fmt.Sprintf("%d:%d", c.Step, c.Index)
	}
	return strings.Join(parts, ",")
}

// ParseSchedule reads a Schedule in the form its String method writes.
func ParseSchedule(text string) (Schedule, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	var out Schedule
	for _, part := range strings.Split(text, ",") {
		step, index, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("clustertest: schedule %q: %q is not step:index", text, part)
		}
		n, err := strconv.ParseUint(step, 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("clustertest: schedule %q: step %q is not a number from 1", text, step)
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < 1 {
			return nil, fmt.Errorf("clustertest: schedule %q: index %q is not a number from 1", text, index)
		}
		if len(out) > 0 && out[len(out)-1].Step >= n {
			return nil, fmt.Errorf("clustertest: schedule %q: steps are not increasing at %d", text, n)
		}
		out = append(out, Choice{Step: n, Index: i})
	}
	return out, nil
}

// chooser picks, at each step with more than one ready, which goes first:
// drawn from the seed (exploration), or from a Schedule (replay). It
// records the choices it made that differ from the canonical order. The
// scheduler calls it with its lock held.
type chooser struct {
	rnd   *rand.Rand // nil: replay fixed
	rate  float64    // how often rnd departs from the canonical order
	fixed map[uint64]int
	made  []made
}

// made is a choice the chooser made, and what it meant.
type made struct {
	Choice
	chose, passed string // the step let through, and those it went before
}

// Exploration rates: each seed departs from the canonical order at one of
// these rates, so that some runs reorder a little (a single event late)
// and others a lot.
var interleaveRates = []float64{0.02, 0.1, 0.3, 1}

func randomChooser(seed uint64) *chooser {
	rnd := rand.New(rand.NewPCG(seed, 0x636c7573746572)) // "cluster": not the seed's other streams
	return &chooser{rnd: rnd, rate: interleaveRates[rnd.IntN(len(interleaveRates))]}
}

func fixedChooser(s Schedule) *chooser {
	c := &chooser{fixed: map[uint64]int{}}
	for _, ch := range s {
		c.fixed[ch.Step] = ch.Index
	}
	return c
}

// pick returns the index in ready (sorted canonically, more than one) of
// the step to let through as step number step.
func (c *chooser) pick(step uint64, ready []*waiter) int {
	n := len(ready)
	i := 0
	if c.rnd != nil {
		if c.rnd.Float64() < c.rate {
			i = 1 + c.rnd.IntN(n-1)
		}
	} else if k, ok := c.fixed[step]; ok {
		i = k % n // a schedule shrunk or replayed on a changed test may ask for more than are ready
	}
	if i != 0 {
		var passed []string
		for _, w := range ready[:min(i, 3)] {
			passed = append(passed, choiceText(w))
		}
		if i > 3 {
			passed = append(passed, fmt.Sprintf("%d more", i-3))
		}
		c.made = append(c.made, made{Choice: Choice{Step: step, Index: i}, chose: choiceText(ready[i]), passed: strings.Join(passed, "; ")})
	}
	return i
}

// schedule returns the choices made so far.
func (c *chooser) schedule() Schedule {
	out := make(Schedule, len(c.made))
	for i, m := range c.made {
		out[i] = m.Choice
	}
	return out
}

// Schedule returns the order this bench let its steps through so far, as
// choices that differ from the canonical order: empty unless
// [Options.Interleave] or [Options.Schedule] is set. Options.Schedule set
// to it (with the same Options otherwise) replays the bench exactly.
func (c *Cluster) Schedule() Schedule {
	c.sched.mu.Lock()
	defer c.sched.mu.Unlock()
	if c.sched.choose == nil {
		return nil
	}
	return c.sched.choose.schedule()
}

// reordering is a choice made that differs from the canonical order,
// readable.
type reordering struct {
	step uint64
	text string
}

// reorderings describes the choices made so far that differ from the
// canonical order.
func (c *Cluster) reorderings() []reordering {
	c.sched.mu.Lock()
	defer c.sched.mu.Unlock()
	if c.sched.choose == nil {
		return nil
	}
	var out []reordering
	for _, m := range c.sched.choose.made {
		out = append(out, reordering{m.Step, fmt.Sprintf("step %d: %s, before %s", m.Step, m.chose, m.passed)})
	}
	return out
}

// chooserFor returns the chooser Options ask for, or nil for the
// canonical order.
func chooserFor(opts Options) (*chooser, error) {
	if opts.Schedule != "" {
		s, err := ParseSchedule(opts.Schedule)
		if err != nil {
			return nil, err
		}
		if opts.Concurrent {
			return nil, errors.New("clustertest: Options.Schedule needs the steps in order, not Concurrent")
		}
		return fixedChooser(s), nil
	}
	if opts.Interleave {
		if opts.Concurrent {
			return nil, errors.New("clustertest: Options.Interleave needs the steps in order, not Concurrent")
		}
		return randomChooser(opts.Seed), nil
	}
	return nil, nil
}

// choiceText describes a step for the report of a reordering: a delivery
// names its watch's client.
func choiceText(w *waiter) string {
	if w.step.Kind == memcluster.StepDelivery && w.client != "" {
		return stepText(w) + " (" + w.client + ")"
	}
	return stepText(w)
}
