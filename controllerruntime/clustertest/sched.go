package clustertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// scheduler is the cluster's gate.Gate. Inside a synctest bubble it
// lets the cluster's steps (requests, watch deliveries, kubelet syncs)
// through one at a time: it waits until every other goroutine of the
// bubble is durably blocked (synctest.Wait), then lets the first pending
// step go, in an order that depends only on the steps, not on how the
// goroutines happened to run. What a step's goroutine does until it blocks
// again happens before the next step. So a test replays exactly: same
// seed, same trace.
//
// Only the scheduler's goroutine calls synctest.Wait. Settle and RunUntil
// ask it to tell them when it next finds nothing pending and everything
// blocked: a quiescent instant. RunUntil also learns when something may
// have changed: a write was stored or a watch event is on its way (reads
// change nothing, so a condition that reads does not wake itself).
type scheduler struct {
	serial bool      // let steps through one at a time (false: at once)
	start  time.Time // when the cluster started, for messages

	mu      sync.Mutex
	pending []*waiter
	idle    chan struct{}     // closed at the next quiescent instant
	changed chan struct{}     // closed when the cluster's state may have changed (for RunUntil)
	poke    chan struct{}     // buffered 1: wakes the loop
	steps   uint64            // steps let through so far
	current *waiter           // the step let through last: what the cluster writes now is its doing
	stopped bool              // run has returned: steps go through at once
	watches map[uint64]string // the client of each watch, learnt from its deliveries

	// A livelock: steps that go on at one instant without end.
	instant   time.Time // the instant of the last step
	atInstant int       // steps let through at it
	last      *waiter   // the last step
	repeats   int       // steps in a row at the instant alike to last
	recent    []string  // the last steps before a livelock is declared
	halted    error     // set once a livelock is declared: every step fails with it
	onHalt    func(msg string)

	// Exploration (see schedule.go): nil choose keeps the canonical
	// order.
	choose    *chooser
	held      map[uint64]time.Time // watches held back (lagging), until when
	heldTimer *time.Timer          // wakes the loop when the first hold ends
	note      func(text string)    // adds a line to the trace (called without mu)
	// What Cluster.StartRestartable started, for PerturbRestart.
	restartables []*restartable
	// conflict starts the other writer's change of the object of a
	// request, for PerturbConflict (called without mu).
	conflict func(gate.Step)
	// What Cluster.StartLeaderElected started, for PerturbHandover, and
	// the clients it stalls (their steps wait), until when.
	elected []*elected
	stalled map[string]time.Time
	// quiet, if set, is called by the scheduler's goroutine at every
	// instant where everything is blocked, before the next step is let
	// through (with no lock of the scheduler held): where Explore checks
	// its properties. Set with mu held.
	quiet func(step uint64)
	// stepped, if set, is told of every step let through, just before
	// it goes (called without mu).
	stepped func(w *waiter)
}

// The scheduler declares a livelock after livelockSteps steps at one
// virtual instant, or livelockRepeats alike steps in a row (the same
// request from the same client). The busiest instants of a bench (a
// thousand pods created at once, each delivered to every watch) take a few
// tens of thousands of steps, a few hundred alike in a row.
const (
	livelockSteps   = 200_000
	livelockRepeats = 5_000
)

// errLivelock is what every step fails with once a livelock is declared.
var errLivelock = errors.New("clustertest: the cluster stopped serving after a livelock (see the test's failure)")

type waiter struct {
	step   gate.Step
	client string // who takes the step (clientOf its context)
	call   *call  // the REST request it belongs to, if any
	seq    uint64 // arrival order, for a stable sort of equal steps
	go_    chan struct{}
	err    error // what Enter returns once go_ is closed
}

func newScheduler(serial bool) *scheduler {
	return &scheduler{serial: serial, start: time.Now(), idle: make(chan struct{}), changed: make(chan struct{}), poke: make(chan struct{}, 1),
		watches: map[uint64]string{}}
}

var _ gate.Gate = (*scheduler)(nil)

// Enter waits for the step's turn.
func (s *scheduler) Enter(ctx context.Context, step gate.Step) error {
	client := clientOf(ctx)
	s.mu.Lock()
	if step.Kind == gate.StepDelivery {
		s.changedLocked()
		if _, ok := s.watches[step.Watch]; !ok {
			s.watches[step.Watch] = client
		}
	}
	if s.halted != nil {
		s.mu.Unlock()
		return s.halted
	}
	if !s.serial || s.stopped {
		s.steps++
		s.mu.Unlock()
		return nil
	}
	if ctx.Value(ungatedKey{}) != nil {
		s.mu.Unlock()
		return nil // the other writer of PerturbConflict: now, before the step it beats
	}
	w := &waiter{step: step, client: client, call: callOf(ctx), seq: s.steps, go_: make(chan struct{})}
	s.pending = append(s.pending, w)
	s.mu.Unlock()
	s.wake()
	select {
	case <-w.go_:
		return w.err
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if i := slices.Index(s.pending, w); i >= 0 {
			s.pending = slices.Delete(s.pending, i, i+1)
			return ctx.Err()
		}
		return w.err // its turn came meanwhile: it happens
	}
}

func (s *scheduler) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// run lets the steps through until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	for {
		synctest.Wait()
		s.mu.Lock()
		quiet, step := s.quiet, s.steps
		s.mu.Unlock()
		if quiet != nil {
			quiet(step)
		}
		s.mu.Lock()
		if s.choose != nil {
			if s.exploreLocked() {
				continue // a step went, or a watch was held back: look again
			}
			// Nothing ready (but what is held back): idle.
		} else if len(s.pending) > 0 {
			i := 0
			{
				for j := range s.pending {
					if compareSteps(s.pending[j], s.pending[i]) < 0 {
						i = j
					}
				}
			}
			w := s.pending[i]
			s.pending = slices.Delete(s.pending, i, i+1)
			s.steps++
			s.current = w
			if msg := s.countLocked(w); msg != "" {
				s.haltLocked()
				w.err = errLivelock
				close(w.go_)
				s.mu.Unlock()
				if s.onHalt != nil {
					s.onHalt(msg)
				}
				continue
			}
			stepped := s.stepped
			s.mu.Unlock()
			if stepped != nil {
				stepped(w)
			}
			close(w.go_)
			continue
		}
		close(s.idle)
		s.idle = make(chan struct{})
		s.mu.Unlock()
		select {
		case <-s.poke:
		case <-ctx.Done():
			s.mu.Lock()
			s.stopped = true
			for _, w := range s.pending {
				close(w.go_)
			}
			s.pending = nil
			s.mu.Unlock()
			return
		}
	}
}

// countLocked counts step w at the current instant and returns, once
// there have been livelockSteps of them, what the last ones were.
func (s *scheduler) countLocked(w *waiter) string {
	if now := time.Now(); !now.Equal(s.instant) {
		s.instant, s.atInstant, s.repeats, s.recent = now, 0, 0, s.recent[:0]
	}
	s.atInstant++
	if s.last != nil && w.step == s.last.step && w.client == s.last.client {
		s.repeats++
	} else {
		s.repeats = 0
	}
	s.last = w
	const keep = 1000
	if s.atInstant > livelockSteps-keep || s.repeats > livelockRepeats-keep {
		s.recent = append(s.recent, stepText(w))
	}
	if s.atInstant < livelockSteps && s.repeats < livelockRepeats {
		return ""
	}
	count := map[string]int{}
	for _, r := range s.recent {
		count[r]++
	}
	top := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b)) })
	var lines []string
	for _, r := range top[:min(5, len(top))] {
		lines = append(lines, fmt.Sprintf("%d× %s", count[r], r))
	}
	return fmt.Sprintf("clustertest: livelock: %d steps at one instant (+%v), %d alike in a row, without time moving (a loop that retries at once, forever?); "+
		"the cluster fails every request from now on. The last %d steps were mostly:\n%s",
		s.atInstant, time.Since(s.start), s.repeats+1, len(s.recent), strings.Join(lines, "\n"))
}

// haltLocked makes every step from now on fail with errLivelock, the
// pending ones too.
func (s *scheduler) haltLocked() { s.haltWithLocked(errLivelock) }

// haltWithLocked makes every step from now on fail with err, the pending
// ones too.
func (s *scheduler) haltWithLocked(err error) {
	if s.halted != nil {
		return
	}
	s.halted = err
	for _, w := range s.pending {
		w.err = err
		close(w.go_)
	}
	s.pending = nil
}

// cause returns the step let through last, in serial mode: what the
// cluster writes until the next step is its doing.
func (s *scheduler) cause() *waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.serial || s.stopped {
		return nil
	}
	return s.current
}

// watchClient is the client of watch n, if a delivery told it.
func (s *scheduler) watchClient(n uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches[n]
}

// compareSteps orders steps by what they are, so that the order does not
// depend on goroutine scheduling: watch deliveries by resourceVersion and
// watch, then requests by verb, object, client and body, then kubelet
// syncs. Steps that compare equal are alike (the same request from two
// workers of one client), and their order does not matter; arrival order
// breaks the tie.
func compareSteps(a, b *waiter) int {
	x, y := a.step, b.step
	if c := cmp.Compare(x.Kind, y.Kind); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(len(x.ResourceVersion), len(y.ResourceVersion)), // numeric order
		cmp.Compare(x.ResourceVersion, y.ResourceVersion),
		cmp.Compare(x.Watch, y.Watch),
		cmp.Compare(x.Verb, y.Verb),
		cmp.Compare(x.Resource, y.Resource),
		cmp.Compare(x.Namespace, y.Namespace),
		cmp.Compare(x.Name, y.Name),
		cmp.Compare(a.client, b.client),
		cmp.Compare(bodyOf(a), bodyOf(b)),
		cmp.Compare(a.seq, b.seq),
	)
}

// bodyOf is the hash of the body of w's request, 0 for none.
func bodyOf(w *waiter) uint64 {
	if w.call == nil {
		return 0
	}
	return w.call.body
}

// settle returns at the next quiescent instant: nothing pending and every
// other goroutine of the bubble durably blocked. Time does not move while
// the caller waits, unless nothing at all can run: then the bubble's clock
// moves to the next timer first.
func (s *scheduler) settle() {
	if !s.serial {
		synctest.Wait()
		return
	}
	s.mu.Lock()
	idle, stopped := s.idle, s.stopped
	s.mu.Unlock()
	if stopped {
		return
	}
	s.wake()
	<-idle
}

// changes returns a channel closed at the next change: a stored write or
// a watch event on its way.
func (s *scheduler) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// wrote is called for every stored write.
func (s *scheduler) wrote() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changedLocked()
}

func (s *scheduler) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// stepText describes a step for messages.
func stepText(w *waiter) string {
	st := w.step
	switch st.Kind {
	case gate.StepRequest:
		if st.Verb == pickVerb {
			return fmt.Sprintf("a worker's pick from the queue of controller %s", st.Name)
		}
		return requestText(string(st.Verb), st.Resource, st.Namespace, st.Name, w.client, nil)
	case gate.StepDelivery:
		return fmt.Sprintf("delivery of %s %s@%s to watch %d", st.Event, st.Resource, st.ResourceVersion, st.Watch)
	}
	return "kubelet sync"
}
