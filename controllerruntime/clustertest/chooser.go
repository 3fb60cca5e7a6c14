package clustertest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// chooser picks, at each step with more than one ready, which goes first:
// drawn from the seed (exploration), from a Schedule (replay), or
// following the choices of another bench (shrinking, see shrink.go). It
// records the choices it made that differ from the canonical order. The
// scheduler calls it with its lock held.
type chooser struct {
	rnd        *rand.Rand // nil: replay fixed
	seed       uint64
	rate       float64 // how often rnd departs from the canonical order
	perturb    Perturbations
	fixed      map[uint64][]Choice // by step, in order
	guiding    bool                // follow guide instead (shrinking)
	guide      []guided            // what is left to follow, in order
	shift      int64               // how far the steps followed have moved
	testClient bool                // Options.PerturbTestClient
	fixedPicks map[string]int      // the picks of workqueues, by pickID
	picks      map[string]*queuePicks
	made       []made
}

// made is a choice the chooser made, and what it meant.
type made struct {
	Choice
	chose, passed string // the step let through, and those it went ahead of
	// The step it let through or perturbed, and its client (zero for a
	// restart, a handover, a pick): what shrinking follows when the
	// step's number moves (see guide).
	step   gate.Step
	client string
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
	relistRate  = 0.01
	// per step with an update or patch ready
	conflictRate = 0.01
	// per step with a leader
	handoverRate = 0.003
)

var stalls = []time.Duration{20 * time.Second, 40 * time.Second}

// keepsStep reports whether the choice leaves its step to be chosen (a
// further choice of the same step, or the canonical one).
func (c Choice) keepsStep() bool {
	p := c.Perturb
	return c.Queue != "" || p == PerturbLag || p == PerturbRestart || p == PerturbConflict || p == PerturbHandover
}

// conflictable reports whether w is a request another writer may beat:
// an update or patch of one object, not the test's own unless
// Options.PerturbTestClient says so.
func (c *chooser) conflictable(w *waiter) bool {
	st := w.step
	return st.Kind == gate.StepRequest && st.Name != "" && w.client != otherWriter &&
		(c.testClient || !testsOwn(w.client)) &&
		(st.Verb == gate.VerbUpdate || st.Verb == gate.VerbUpdateStatus || st.Verb == gate.VerbPatch)
}

// testsOwn reports whether client is the test's own: [Cluster.Client]'s,
// or a direct client of the memcluster the test calls (its requests name
// no client).
func testsOwn(client string) bool { return client == testClient || client == "" }

var lags = []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, 10 * time.Second}

func randomChooser(seed uint64, perturb Perturbations) *chooser {
	rnd := rand.New(rand.NewPCG(seed, 0x636c7573746572)) // "cluster": not the seed's other streams
	return &chooser{rnd: rnd, seed: seed, rate: interleaveRates[rnd.IntN(len(interleaveRates))], perturb: perturb}
}

func fixedChooser(s Schedule) *chooser {
	c := &chooser{fixed: map[uint64][]Choice{}, fixedPicks: map[string]int{}}
	for _, ch := range s {
		if ch.Queue != "" {
			c.fixedPicks[pickID(ch.Queue, ch.Pop)] = ch.Index
			continue
		}
		c.fixed[ch.Step] = append(c.fixed[ch.Step], ch)
	}
	return c
}

// pick chooses what to do at step number step, among ready (sorted
// canonically, not empty): a Choice whose Index is in range.
func (c *chooser) pick(step uint64, ready []*waiter, restartables int, leaders []int) Choice {
	var ch Choice
	switch {
	case c.rnd != nil:
		ch = c.draw(step, ready, restartables, leaders)
	case c.guiding:
		ch = c.follow(step, ready, restartables, leaders)
	default:
		ch = c.replay(step, ready, restartables, leaders)
	}
	if ch.Perturb == PerturbRestart || ch.Perturb == PerturbHandover {
		c.made = append(c.made, made{Choice: ch})
		return ch
	}
	if ch.Index != 0 || ch.Perturb != 0 {
		w := ready[ch.Index]
		m := made{Choice: ch, chose: stepLine(w.step, w.client), step: w.step, client: w.client}
		if ch.Perturb == 0 {
			m.passed = passedText(ready[:ch.Index])
		}
		c.made = append(c.made, m)
	}
	return ch
}

// draw is pick for exploration: from the seed.
func (c *chooser) draw(step uint64, ready []*waiter, restartables int, leaders []int) Choice {
	n := len(ready)
	ch := Choice{Step: step}
	var deliveries, writes []int
	if c.perturb != 0 {
		for i, w := range ready {
			if w.step.Kind == gate.StepDelivery {
				deliveries = append(deliveries, i)
			}
			if c.perturb&PerturbConflict != 0 && c.conflictable(w) {
				writes = append(writes, i)
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
	case len(deliveries) > 0 && c.perturb&PerturbRelist != 0 && r >= lagRate+closeRate+restartRate && r < lagRate+closeRate+restartRate+relistRate:
		ch.Perturb, ch.Index = PerturbRelist, deliveries[c.rnd.IntN(len(deliveries))]
	case len(writes) > 0 && c.perturb&PerturbConflict != 0 && r >= lagRate+closeRate+restartRate+relistRate &&
		r < lagRate+closeRate+restartRate+relistRate+conflictRate:
		ch.Perturb, ch.Index = PerturbConflict, writes[c.rnd.IntN(len(writes))]
	case len(leaders) > 0 && c.perturb&PerturbHandover != 0 && r >= lagRate+closeRate+restartRate+relistRate+conflictRate &&
		r < lagRate+closeRate+restartRate+relistRate+conflictRate+handoverRate:
		ch.Perturb, ch.Index, ch.Lag = PerturbHandover, leaders[c.rnd.IntN(len(leaders))], stalls[c.rnd.IntN(len(stalls))]
	case n > 1 && c.rnd.Float64() < c.rate:
		ch.Index = 1 + c.rnd.IntN(n-1)
	}
	return ch
}

// replay is pick for a replay: the schedule's choice of the step, if it
// applies.
func (c *chooser) replay(step uint64, ready []*waiter, restartables int, leaders []int) Choice {
	fs := c.fixed[step]
	if len(fs) == 0 {
		return Choice{Step: step}
	}
	c.fixed[step] = fs[1:]
	return c.applicable(fs[0], ready, restartables, leaders)
}

// applicable returns ch if it applies to ready (a schedule shrunk, or
// replayed on a changed test, may ask for more than are ready, or perturb
// what is not a delivery), else the canonical choice of its step.
func (c *chooser) applicable(ch Choice, ready []*waiter, restartables int, leaders []int) Choice {
	n := len(ready)
	switch {
	case ch.Perturb == PerturbHandover:
		if !slices.Contains(leaders, ch.Index) {
			return Choice{Step: ch.Step}
		}
	case ch.Perturb == PerturbRestart && restartables == 0:
		return Choice{Step: ch.Step}
	case ch.Perturb == PerturbRestart:
		ch.Index %= restartables
	case ch.Perturb == PerturbConflict:
		ch.Index %= n
		if !c.conflictable(ready[ch.Index]) {
			return Choice{Step: ch.Step}
		}
	default:
		ch.Index %= n
		if ch.Perturb != 0 && ready[ch.Index].step.Kind != gate.StepDelivery {
			return Choice{Step: ch.Step}
		}
	}
	return ch
}

// schedule returns the choices made so far.
func (c *chooser) schedule() Schedule {
	out := make(Schedule, len(c.made))
	for i, m := range c.made {
		out[i] = m.Choice
	}
	return out
}

// made returns the choices made so far, with what they acted on.
func (c *Cluster) made() []made {
	c.sched.mu.Lock()
	defer c.sched.mu.Unlock()
	if c.sched.choose == nil {
		return nil
	}
	return slices.Clone(c.sched.choose.made)
}

// chooserFor returns the chooser Options ask for, or nil for the
// canonical order.
func chooserFor(opts Options) (c *chooser, err error) {
	defer func() {
		if c != nil {
			c.testClient = opts.PerturbTestClient
		}
	}()
	switch {
	case opts.guide != nil:
		return guidedChooser(opts.guide), nil
	case opts.Schedule != "":
		s, err := ParseSchedule(opts.Schedule)
		if err != nil {
			return nil, err
		}
		if opts.Concurrent {
			return nil, errors.New("clustertest: Options.Schedule needs the steps in order, not Concurrent")
		}
		return fixedChooser(s), nil
	case opts.Interleave:
		if opts.Concurrent {
			return nil, errors.New("clustertest: Options.Interleave needs the steps in order, not Concurrent")
		}
		return randomChooser(opts.Seed, opts.Perturb), nil
	}
	return nil, nil
}
