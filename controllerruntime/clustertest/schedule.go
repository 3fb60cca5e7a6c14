package clustertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/gate"
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

// Choice is one entry of a [Schedule]: at step Step, let the ready step
// of index Index go first, or, with a Perturbation, perturb it:
//
//   - PerturbLag: hold back the watch the ready delivery of index Index
//     is for, for Lag of virtual time (its client's cache lags behind
//     the cluster, its own writes included); the step is then chosen
//     among the others (a further Choice of the same Step, or the
//     canonical one);
//   - PerturbWatchClose: end the watch the ready delivery of index Index
//     is for, without delivering it (the server closed the watch; its
//     client watches again from what it has seen). This is the step.
//   - PerturbRestart: stop what [Cluster.StartRestartable] started
//     (Index-th of them) and start it again from its build function; the
//     step is then chosen as after a lag.
type Choice struct {
	Step    uint64
	Index   int
	Perturb Perturbations // one of them, or 0 for a reordering
	Lag     time.Duration // PerturbLag's
}

func (c Choice) String() string {
	switch c.Perturb {
	case PerturbLag:
		return fmt.Sprintf("%d:lag%d=%v", c.Step, c.Index, c.Lag)
	case PerturbWatchClose:
		return fmt.Sprintf("%d:close%d", c.Step, c.Index)
	case PerturbRestart:
		return fmt.Sprintf("%d:restart%d", c.Step, c.Index)
	}
	return fmt.Sprintf("%d:%d", c.Step, c.Index)
}

// Perturbations are what [Options.Perturb] lets the seed do besides
// reordering, each at any step: a set of flags.
type Perturbations uint8

// The perturbations.
const (
	// PerturbLag holds back one watch's deliveries for a while (50 ms to
	// 10 s of virtual time): an informer behind the API server, and
	// behind its own client's writes.
	PerturbLag Perturbations = 1 << iota
	// PerturbWatchClose ends a watch before one of its deliveries: its
	// client (a reflector) watches again from the last resourceVersion it
	// saw.
	PerturbWatchClose
	// PerturbRestart restarts what [Cluster.StartRestartable] started (an
	// operator's Manager) at a step: its caches, queues and memory start
	// afresh, and what it was doing is cut short.
	PerturbRestart

	// AllPerturbations is every perturbation.
	AllPerturbations = PerturbLag | PerturbWatchClose | PerturbRestart
)

// String is the form ParseSchedule reads: "12:1,40:lag0=2s,41:close1",
// or "" for the canonical order.
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.String()
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
		c := Choice{Step: n}
		least := 1
		switch {
		case strings.HasPrefix(index, "lag"):
			i, lag, ok := strings.Cut(strings.TrimPrefix(index, "lag"), "=")
			d, err := time.ParseDuration(lag)
			if !ok || err != nil || d <= 0 {
				return nil, fmt.Errorf("clustertest: schedule %q: %q is not lag<index>=<duration>", text, part)
			}
			c.Perturb, c.Lag, index, least = PerturbLag, d, i, 0
		case strings.HasPrefix(index, "close"):
			c.Perturb, index, least = PerturbWatchClose, strings.TrimPrefix(index, "close"), 0
		case strings.HasPrefix(index, "restart"):
			c.Perturb, index, least = PerturbRestart, strings.TrimPrefix(index, "restart"), 0
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < least {
			return nil, fmt.Errorf("clustertest: schedule %q: index %q is not a number from %d", text, index, least)
		}
		c.Index = i
		if len(out) > 0 {
			// Several choices of one step: lags and restarts first, then
			// at most one that lets a step go.
			last := out[len(out)-1]
			if last.Step > n || (last.Step == n && last.Perturb != PerturbLag && last.Perturb != PerturbRestart) {
				return nil, fmt.Errorf("clustertest: schedule %q: steps are not in order at %q", text, part)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// chooser picks, at each step with more than one ready, which goes first:
// drawn from the seed (exploration), or from a Schedule (replay). It
// records the choices it made that differ from the canonical order. The
// scheduler calls it with its lock held.
type chooser struct {
	rnd     *rand.Rand // nil: replay fixed
	rate    float64    // how often rnd departs from the canonical order
	perturb Perturbations
	fixed   map[uint64][]Choice // by step, in order
	made    []made
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

// Perturbation rates, per step with a delivery ready, and the lags drawn.
const (
	lagRate     = 0.01
	closeRate   = 0.005
	restartRate = 0.003
)

var lags = []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, 10 * time.Second}

func randomChooser(seed uint64, perturb Perturbations) *chooser {
	rnd := rand.New(rand.NewPCG(seed, 0x636c7573746572)) // "cluster": not the seed's other streams
	return &chooser{rnd: rnd, rate: interleaveRates[rnd.IntN(len(interleaveRates))], perturb: perturb}
}

func fixedChooser(s Schedule) *chooser {
	c := &chooser{fixed: map[uint64][]Choice{}}
	for _, ch := range s {
		c.fixed[ch.Step] = append(c.fixed[ch.Step], ch)
	}
	return c
}

// pick chooses what to do at step number step, among ready (sorted
// canonically, not empty): a Choice whose Index is in range.
func (c *chooser) pick(step uint64, ready []*waiter, restartables int) Choice {
	n := len(ready)
	ch := Choice{Step: step}
	if c.rnd != nil {
		var deliveries []int
		if c.perturb != 0 {
			for i, w := range ready {
				if w.step.Kind == gate.StepDelivery {
					deliveries = append(deliveries, i)
				}
			}
		}
		switch r := c.rnd.Float64(); {
		case len(deliveries) > 0 && c.perturb&PerturbLag != 0 && r < lagRate:
			ch.Perturb, ch.Index, ch.Lag = PerturbLag, deliveries[c.rnd.IntN(len(deliveries))], lags[c.rnd.IntN(len(lags))]
		case len(deliveries) > 0 && c.perturb&PerturbWatchClose != 0 && r < lagRate+closeRate:
			ch.Perturb, ch.Index = PerturbWatchClose, deliveries[c.rnd.IntN(len(deliveries))]
		case restartables > 0 && c.perturb&PerturbRestart != 0 && r < lagRate+closeRate+restartRate:
			ch.Perturb, ch.Index = PerturbRestart, c.rnd.IntN(restartables)
		case n > 1 && c.rnd.Float64() < c.rate:
			ch.Index = 1 + c.rnd.IntN(n-1)
		}
	} else if fs := c.fixed[step]; len(fs) > 0 {
		// A schedule shrunk, or replayed on a changed test, may ask for
		// more than are ready, or perturb what is not a delivery.
		ch = fs[0]
		c.fixed[step] = fs[1:]
		switch {
		case ch.Perturb == PerturbRestart && restartables == 0:
			ch = Choice{Step: step}
		case ch.Perturb == PerturbRestart:
			ch.Index %= restartables
		default:
			ch.Index %= n
			if ch.Perturb != 0 && ready[ch.Index].step.Kind != gate.StepDelivery {
				ch = Choice{Step: step}
			}
		}
	}
	if ch.Perturb == PerturbRestart {
		c.made = append(c.made, made{Choice: ch})
		return ch
	}
	if ch.Index != 0 || ch.Perturb != 0 {
		m := made{Choice: ch, chose: choiceText(ready[ch.Index])}
		if ch.Perturb == 0 {
			var passed []string
			for _, w := range ready[:min(ch.Index, 3)] {
				passed = append(passed, choiceText(w))
			}
			if ch.Index > 3 {
				passed = append(passed, fmt.Sprintf("%d more", ch.Index-3))
			}
			m.passed = strings.Join(passed, "; ")
		}
		c.made = append(c.made, m)
	}
	return ch
}

// errWatchClosed ends a watch the chooser closes.
var errWatchClosed = errors.New("clustertest: watch closed (explored)")

// exploreLocked takes the next step with the chooser. Called with s.mu
// held, it returns true once it has released it, having let a step
// through or held a watch back; false (mu still held) when nothing is
// ready but deliveries held back, for which it sets a timer.
func (s *scheduler) exploreLocked() bool {
	now := time.Now()
	var ready []*waiter
	var next time.Time // the end of the first hold with a delivery waiting
	for _, w := range s.pending {
		if w.step.Kind == gate.StepDelivery {
			if until, ok := s.held[w.step.Watch]; ok {
				if now.Before(until) {
					if next.IsZero() || until.Before(next) {
						next = until
					}
					continue
				}
				delete(s.held, w.step.Watch)
				s.changedLocked() // its events are on their way again
			}
		}
		ready = append(ready, w)
	}
	if len(ready) == 0 {
		if !next.IsZero() {
			if s.heldTimer != nil {
				s.heldTimer.Stop()
			}
			s.heldTimer = time.AfterFunc(next.Sub(now), s.wake)
		}
		return false
	}
	// Sorted, so that a choice is an index in the canonical order (0 is
	// the canonical step); stable, so that alike steps keep their arrival
	// order, as in the canonical order.
	slices.SortStableFunc(ready, compareSteps)
	ch := s.choose.pick(s.steps+1, ready, len(s.restartables))
	note := s.note
	if ch.Perturb == PerturbRestart {
		r := s.restartables[ch.Index]
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("restart of %s (explored)", r.name))
		}
		r.restart()
		return true
	}
	w := ready[ch.Index]
	if ch.Perturb == PerturbLag {
		if s.held == nil {
			s.held = map[uint64]time.Time{}
		}
		s.held[w.step.Watch] = now.Add(ch.Lag)
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("watch %d of %s%s held back %v (explored)", w.step.Watch, w.step.Resource, byClient(w), ch.Lag))
		}
		return true
	}
	s.pending = slices.DeleteFunc(s.pending, func(p *waiter) bool { return p == w })
	s.steps++
	s.current = w
	if ch.Perturb == PerturbWatchClose {
		w.err = errWatchClosed
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("watch %d of %s%s closed (explored)", w.step.Watch, w.step.Resource, byClient(w)))
		}
		close(w.go_)
		return true
	}
	if msg := s.countLocked(w); msg != "" {
		s.haltLocked()
		w.err = errLivelock
		close(w.go_)
		s.mu.Unlock()
		if s.onHalt != nil {
			s.onHalt(msg)
		}
		return true
	}
	s.mu.Unlock()
	close(w.go_)
	return true
}

func byClient(w *waiter) string {
	if w.client == "" {
		return ""
	}
	return " by " + w.client
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
		var text string
		switch m.Perturb {
		case PerturbLag:
			text = fmt.Sprintf("step %d: the watch of %s held back %v", m.Step, m.chose, m.Lag)
		case PerturbWatchClose:
			text = fmt.Sprintf("step %d: the watch of %s closed instead", m.Step, m.chose)
		case PerturbRestart:
			text = fmt.Sprintf("step %d: restart of %s", m.Step, c.sched.restartables[m.Index].name)
		default:
			text = fmt.Sprintf("step %d: %s, before %s", m.Step, m.chose, m.passed)
		}
		out = append(out, reordering{m.Step, text})
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
		return randomChooser(opts.Seed, opts.Perturb), nil
	}
	return nil, nil
}

// choiceText describes a step for the report of a reordering: a delivery
// names its watch's client.
func choiceText(w *waiter) string {
	if w.step.Kind == gate.StepDelivery && w.client != "" {
		return stepText(w) + " (" + w.client + ")"
	}
	return stepText(w)
}

// note adds a line to the trace, at the current time.
func (r *recorder) note(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(r.at() + " " + text)
}
