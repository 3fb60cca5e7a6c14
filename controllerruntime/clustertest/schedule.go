package clustertest

import (
	"errors"
	"fmt"
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
//   - PerturbRelist: end the watch the ready delivery of index Index is
//     for with a 410 Expired ERROR event instead of the delivery; its
//     client (a reflector) lists again. This is the step.
//   - PerturbConflict: before the ready request of index Index (an
//     update or patch of one object) is served, another writer changes
//     that object; the step is then chosen as after a lag.
//   - PerturbHandover: stall the instance that leads the Index-th
//     [Cluster.StartLeaderElected] group for Lag (its requests and its
//     watches' deliveries wait), so that another takes its Lease over;
//     the step is then chosen as after a lag.
//
// A Choice with a Queue is a pick of a workqueue made with [NewQueue]:
// the Pop-th key that queue handed out was the one of index Index among
// those ready (0 is the first in); Step is the pick's own step.
type Choice struct {
	Step    uint64
	Index   int
	Perturb Perturbations // one of them, or 0 for a reordering
	Lag     time.Duration // PerturbLag's and PerturbHandover's
	Queue   string        // a pick's controller
	Pop     uint64        // a pick's number in its queue, from 1
}

func (c Choice) String() string {
	if c.Queue != "" {
		return fmt.Sprintf("%d:pick%d@%s", c.Step, c.Index, pickID(c.Queue, c.Pop))
	}
	switch c.Perturb {
	case PerturbLag:
		return fmt.Sprintf("%d:lag%d=%v", c.Step, c.Index, c.Lag)
	case PerturbWatchClose:
		return fmt.Sprintf("%d:close%d", c.Step, c.Index)
	case PerturbRestart:
		return fmt.Sprintf("%d:restart%d", c.Step, c.Index)
	case PerturbRelist:
		return fmt.Sprintf("%d:relist%d", c.Step, c.Index)
	case PerturbConflict:
		return fmt.Sprintf("%d:conflict%d", c.Step, c.Index)
	case PerturbHandover:
		return fmt.Sprintf("%d:handover%d=%v", c.Step, c.Index, c.Lag)
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
	// PerturbRelist ends a watch before one of its deliveries with a 410
	// Expired error, as kube-apiserver ends a watch whose resourceVersion
	// was compacted: its client (a reflector) lists again, a second or so
	// later, and watches from the list. The events in between are lost:
	// the informer sees the difference between its cache and the list
	// (several updates as one, an object created and deleted meanwhile
	// not at all, a deletion as a delete of its last known state, as
	// client-go's DeletedFinalStateUnknown).
	PerturbRelist
	// PerturbConflict makes another writer (the trace's client
	// "other-writer": a user, another manager) change an object, by a
	// merge patch of an annotation, just before an update or patch of
	// that object is served: a request that carries the resourceVersion
	// it read is answered 409 Conflict, as a real API server answers it,
	// and the operator must read again and retry; one that does not
	// overwrites the other writer's change (see [NoLostUpdates]).
	PerturbConflict
	// PerturbHandover stalls the leader of a [Cluster.StartLeaderElected]
	// group for 20 or 40 s of virtual time, as a long garbage-collection
	// pause, a frozen node or a partition would: its requests and its
	// watches' events wait, its renewals time out, it steps down, and a
	// standby takes the Lease over once it has expired. What it had in
	// flight with a context that outlives its Manager is served when the
	// stall ends: a write of a leader that lost its lease (see
	// [LeaderOnlyWrites]).
	PerturbHandover

	// AllPerturbations is every perturbation.
	AllPerturbations = PerturbLag | PerturbWatchClose | PerturbRestart | PerturbRelist | PerturbConflict | PerturbHandover
)

// String names the perturbations, as "lag|relist|conflict" ("none" for
// none).
func (p Perturbations) String() string {
	var names []string
	for _, n := range []struct {
		p    Perturbations
		name string
	}{{PerturbLag, "lag"}, {PerturbWatchClose, "close"}, {PerturbRestart, "restart"}, {PerturbRelist, "relist"},
		{PerturbConflict, "conflict"}, {PerturbHandover, "handover"}} {
		if p&n.p != 0 {
			names = append(names, n.name)
			p &^= n.p
		}
	}
	if p != 0 {
		names = append(names, fmt.Sprintf("%#x", uint8(p)))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

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
		case strings.HasPrefix(index, "pick"):
			i, id, ok := strings.Cut(strings.TrimPrefix(index, "pick"), "@")
			k := strings.LastIndex(id, "#")
			if !ok || k <= 0 {
				return nil, fmt.Errorf("clustertest: schedule %q: %q is not pick<index>@<controller>#<n>", text, part)
			}
			pop, err := strconv.ParseUint(id[k+1:], 10, 64)
			if err != nil || pop == 0 {
				return nil, fmt.Errorf("clustertest: schedule %q: %q is not pick<index>@<controller>#<n>", text, part)
			}
			c.Queue, c.Pop, index = id[:k], pop, i
		case strings.HasPrefix(index, "lag"), strings.HasPrefix(index, "handover"):
			kind, p := "lag", PerturbLag
			if strings.HasPrefix(index, "handover") {
				kind, p = "handover", PerturbHandover
			}
			i, lag, ok := strings.Cut(strings.TrimPrefix(index, kind), "=")
			d, err := time.ParseDuration(lag)
			if !ok || err != nil || d <= 0 {
				return nil, fmt.Errorf("clustertest: schedule %q: %q is not %s<index>=<duration>", text, part, kind)
			}
			c.Perturb, c.Lag, index, least = p, d, i, 0
		case strings.HasPrefix(index, "close"):
			c.Perturb, index, least = PerturbWatchClose, strings.TrimPrefix(index, "close"), 0
		case strings.HasPrefix(index, "restart"):
			c.Perturb, index, least = PerturbRestart, strings.TrimPrefix(index, "restart"), 0
		case strings.HasPrefix(index, "relist"):
			c.Perturb, index, least = PerturbRelist, strings.TrimPrefix(index, "relist"), 0
		case strings.HasPrefix(index, "conflict"):
			c.Perturb, index, least = PerturbConflict, strings.TrimPrefix(index, "conflict"), 0
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < least {
			return nil, fmt.Errorf("clustertest: schedule %q: index %q is not a number from %d", text, index, least)
		}
		c.Index = i
		if len(out) > 0 {
			// Several choices of one step: lags, restarts and conflicts
			// first, then at most one that lets a step go.
			last := out[len(out)-1]
			if last.Step > n || (last.Step == n && !last.keepsStep() && c.Queue == "") {
				return nil, fmt.Errorf("clustertest: schedule %q: steps are not in order at %q", text, part)
			}
		}
		out = append(out, c)
	}
	return out, nil
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
		if until, ok := s.stalled[w.client]; ok {
			if now.Before(until) {
				if next.IsZero() || until.Before(next) {
					next = until
				}
				continue
			}
			delete(s.stalled, w.client)
			s.changedLocked()
		}
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
	var leaders []int
	for i, g := range s.elected {
		if l := g.leaderClient(); l != "" {
			if _, stalled := s.stalled[l]; !stalled {
				leaders = append(leaders, i)
			}
		}
	}
	ch := s.choose.pick(s.steps+1, ready, len(s.restartables), leaders)
	note := s.note
	if ch.Perturb == PerturbHandover {
		g := s.elected[ch.Index]
		leader := g.leaderClient()
		if leader == "" { // it stepped down meanwhile
			s.mu.Unlock()
			return true
		}
		if s.stalled == nil {
			s.stalled = map[string]time.Time{}
		}
		s.stalled[leader] = now.Add(ch.Lag)
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("%s, the leader of lease %s/%s, stalls %v: its requests and watch events wait (explored)", leader, LeaseNamespace, g.id, ch.Lag))
		}
		return true
	}
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
	if ch.Perturb == PerturbConflict {
		// The other writer's request passes the gate at once (see
		// ungated); its writes are its own.
		s.current = &waiter{step: gate.Step{Kind: gate.StepRequest, Verb: gate.VerbPatch,
			Resource: w.step.Resource, Namespace: w.step.Namespace, Name: w.step.Name}, client: otherWriter}
		conflict := s.conflict
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("%s changes %s %s before %s (explored)", otherWriter, w.step.Resource, keyText(w.step.Namespace, w.step.Name), stepText(w)))
		}
		if conflict != nil {
			conflict(w.step)
		}
		return true
	}
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
	if ch.Perturb == PerturbWatchClose || ch.Perturb == PerturbRelist {
		what := "closed"
		w.err = errWatchClosed
		if ch.Perturb == PerturbRelist {
			what = "expired (410): its client lists again"
			w.err = gate.ErrWatchExpired
		}
		s.mu.Unlock()
		if note != nil {
			note(fmt.Sprintf("watch %d of %s%s %s (explored)", w.step.Watch, w.step.Resource, byClient(w), what))
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
	stepped := s.stepped
	s.mu.Unlock()
	if stepped != nil {
		stepped(w)
	}
	close(w.go_)
	return true
}

func byClient(w *waiter) string {
	if w.client == "" {
		return ""
	}
	return " by " + w.client
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

// note adds a line to the trace, at the current time.
func (r *recorder) note(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(r.at() + " " + text)
}
