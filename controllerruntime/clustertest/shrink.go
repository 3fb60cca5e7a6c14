package clustertest

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// Shrinking a schedule that broke a property.
//
// A Choice names its step by number, and numbers move: without an early
// choice (a relist: its list and its new watch are steps of their own), a
// bench takes more or fewer steps before the next one, and the choices
// after it, replayed by number, land on other steps. Removing a choice
// that does not matter would then lose the violation, and the shrunk
// schedule would keep choices only for their numbers. So shrinking
// follows each choice by what it acted on (the step it let through, or
// the delivery or request it perturbed: its kind, verb, resource, object,
// event, resourceVersion and client), near where it is expected (its
// number, moved as far as the steps followed before it moved), and keeps
// what the bench actually chose, by number: the schedule it reports
// replays exactly.

// guided is a choice to follow while shrinking: a Choice and what it
// acted on.
type guided struct {
	Choice
	on     gate.Step // its watch number left out (numbers move too); zero for a restart, a handover, a pick
	client string
}

// guideSlack is how many steps before or after the step where a choice
// is expected shrinking looks for what it acted on.
const guideSlack = 24

// guideOf returns the choices of made to follow.
func guideOf(ms []made) []guided {
	out := make([]guided, len(ms))
	for i, m := range ms {
		on := m.step
		on.Watch = 0
		out[i] = guided{Choice: m.Choice, on: on, client: m.client}
	}
	return out
}

// scheduleOf returns the Schedule of guide.
func scheduleOf(guide []guided) Schedule {
	out := make(Schedule, len(guide))
	for i, g := range guide {
		out[i] = g.Choice
	}
	return out
}

func guidedChooser(guide []guided) *chooser {
	c := &chooser{guiding: true, fixedPicks: map[string]int{}}
	for _, g := range guide {
		if g.Queue != "" {
			c.fixedPicks[pickID(g.Queue, g.Pop)] = g.Index
			continue
		}
		c.guide = append(c.guide, g)
	}
	return c
}

// follow is pick while shrinking: the next choice of the guide, if what
// it acted on is ready near where it is expected.
func (c *chooser) follow(step uint64, ready []*waiter, restartables int, leaders []int) Choice {
	for len(c.guide) > 0 {
		g := c.guide[0]
		at := int64(g.Step) + c.shift // where it is expected
		now := int64(step)
		if now < at-guideSlack {
			break
		}
		if g.on == (gate.Step{}) { // a restart or a handover: by its number
			if now < at {
				break
			}
			c.guide = c.guide[1:]
			ch := g.Choice
			ch.Step = step
			if ch = c.applicable(ch, ready, restartables, leaders); ch.Perturb != 0 {
				return ch
			}
			continue
		}
		// What it acted on, exactly; or, once where it is expected, the
		// same but for its resourceVersion (an earlier choice left out
		// may have reordered the writes before it).
		loose := g.on
		loose.ResourceVersion = ""
		i := -1
		for j, w := range ready {
			if w.client != g.client {
				continue
			}
			on := w.step
			on.Watch = 0
			if on == g.on {
				i = j
				break
			}
			if on.ResourceVersion = ""; i < 0 && now >= at && on == loose {
				i = j // unless an exact match follows
			}
		}
		switch {
		case i == 0 && g.Perturb == 0:
			// It goes first anyway: nothing to reorder.
			c.guide, c.shift = c.guide[1:], now-int64(g.Step)
			return Choice{Step: step}
		case i >= 0:
			c.guide, c.shift = c.guide[1:], now-int64(g.Step)
			ch := g.Choice
			ch.Step, ch.Index = step, i
			if ch = c.applicable(ch, ready, restartables, leaders); ch.Index != 0 || ch.Perturb != 0 {
				return ch
			}
			continue
		case now > at+guideSlack:
			c.guide = c.guide[1:] // gone: this bench never meets it
			continue
		}
		break
	}
	return Choice{Step: step}
}

// shrink looks for a smaller schedule that breaks the same property:
// without whole runs of v's choices first, then one at a time (following
// the others by what they acted on, see above), then each reordering
// lowered to index 1 (the step right after the canonical one), as delta
// debugging does. It first replays v alone (its seed ran beside others,
// which share math/rand's global source).
func shrink(t *testing.T, opts ExploreOptions, scenario Scenario, v *Violation) *Violation {
	budget := opts.ShrinkRuns
	if budget <= 0 {
		budget = 200
	}
	runs := 0
	var best *Violation
	verified := false // best came from a replay of its schedule
	// keep returns w if it broke v's property, with the choices its bench
	// made.
	keep := func(out outcome) *Violation {
		runs++
		if w := out.violation; w != nil && w.Property == v.Property {
			w.Schedule, w.Found, w.Explored = out.schedule, v.Found, v.Explored
			w.made = out.made
			return w
		}
		return nil
	}
	replay := func(s Schedule) *Violation { return keep(runBench(t, opts, scenario, v.Seed, s, nil, true)) }
	follow := func(g []guided) *Violation {
		return keep(runBench(t, opts, scenario, v.Seed, nil, append([]guided{}, g...), true))
	}
	accept := func(w *Violation, replayed bool) { best, verified = w, replayed }
	if w := replay(v.Found); w != nil {
		accept(w, true)
	}
	if best == nil {
		// It did not break the property alone: report it as found.
		v.Schedule, v.Shrinks = v.Found, runs
		v.Message += "\n(this seed broke the property beside other benches, but not alone: the replay may not reproduce it)"
		return finish(v)
	}
	if w := replay(nil); w != nil {
		accept(w, true)
	}
	cur := guideOf(best.made)
	for chunk := max(len(cur)/2, 1); len(cur) > 0 && runs < budget; {
		removed := false
		for i := 0; i < len(cur) && runs < budget; {
			cand := append(append([]guided{}, cur[:i]...), cur[min(i+chunk, len(cur)):]...)
			// Following the others by what they acted on drops a choice
			// kept for its number; by number works where what they acted
			// on changed (a pod's generated name, a resourceVersion).
			w := follow(cand)
			replayed := false
			if (w == nil || len(w.made) >= len(cur)) && runs < budget {
				w, replayed = replay(scheduleOf(cand)), true
			}
			if w != nil && len(w.made) < len(cur) {
				accept(w, replayed)
				cur, removed = guideOf(w.made), true
				continue
			}
			i += chunk
		}
		if chunk == 1 && !removed {
			break
		}
		if !removed {
			chunk = max(chunk/2, 1)
		}
		chunk = min(chunk, max(len(cur)/2, 1))
	}
	for i := 0; i < len(best.Schedule) && runs < budget; i++ {
		s := best.Schedule
		if s[i].Index <= 1 || s[i].Perturb != 0 || s[i].Queue != "" {
			continue // canonical but one already, a perturbation's target, a pick
		}
		cand := append(Schedule{}, s...)
		cand[i].Index = 1
		if w := replay(cand); w != nil {
			accept(w, true)
		}
	}
	if !verified {
		// What the bench chose while following replays it exactly, as any
		// schedule a bench made; make sure of it.
		if w := replay(best.Schedule); w != nil {
			accept(w, true)
		} else {
			best.Message += "\n(the shrunk schedule did not break the property again when replayed alone: the bench may not be deterministic)"
		}
	}
	best.Shrinks = runs
	return finish(best)
}
