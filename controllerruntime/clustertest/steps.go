package clustertest

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// The steps that matter, as a violation's report tells them: one line per
// choice of the shrunk schedule, saying what the bench did there that the
// canonical order would not have done.

// reordering is a choice made, readable.
type reordering struct {
	step uint64
	text string
}

// reorderings describes the choices made so far, one line each.
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
		case 0:
			if m.Queue != "" {
				text = fmt.Sprintf("the queue of controller %s hands out %s ahead of %s", m.Queue, m.chose, m.passed)
				break
			}
			text = fmt.Sprintf("%s goes ahead of %s", m.chose, m.passed)
		case PerturbLag:
			text = fmt.Sprintf("%s is held back %v, with %s next on it", watchText(m.step, m.client), m.Lag, deliveredText(m.step))
		case PerturbWatchClose:
			text = fmt.Sprintf("%s is closed before %s: %s watches again from there", watchText(m.step, m.client), deliveredText(m.step), cmp.Or(m.client, "its client"))
		case PerturbRelist:
			text = fmt.Sprintf("%s expires (410 Gone) before %s: %s lists %s again, the events in between lost", watchText(m.step, m.client),
				deliveredText(m.step), cmp.Or(m.client, "its client"), m.step.Resource)
		case PerturbConflict:
			text = fmt.Sprintf("%s changes %s %s just before %s", otherWriter, m.step.Resource, objectText(m.step.Namespace, m.step.Name), m.chose)
		case PerturbRestart:
			text = fmt.Sprintf("%s restarts", c.sched.restartables[m.Index].name)
		case PerturbHandover:
			text = fmt.Sprintf("the leader of lease %s/%s stalls %v", LeaseNamespace, c.sched.elected[m.Index].id, m.Lag)
		}
		out = append(out, reordering{m.Step, fmt.Sprintf("step %d: %s", m.Step, text)})
	}
	return out
}

// stepLine describes a step in a line of the steps that matter: a
// request ("update/status sites default/shop by manager"), a delivery
// ("MODIFIED sites default/shop@29 to manager (watch 5)"), a worker's
// pick, a kubelet pass.
func stepLine(st gate.Step, client string) string {
	switch st.Kind {
	case gate.StepRequest:
		if st.Verb == pickVerb {
			return fmt.Sprintf("a worker's pick from the queue of controller %s", st.Name)
		}
		return fmt.Sprintf("%s %s %s by %s", st.Verb, st.Resource, objectText(st.Namespace, st.Name), cmp.Or(client, "a direct client"))
	case gate.StepDelivery:
		if client == "" {
			return fmt.Sprintf("%s to watch %d", deliveredText(st), st.Watch)
		}
		return fmt.Sprintf("%s to %s (watch %d)", deliveredText(st), client, st.Watch)
	}
	return "a kubelet pass"
}

// deliveredText is a delivery's event: "MODIFIED sites default/shop@29".
func deliveredText(st gate.Step) string {
	text := fmt.Sprintf("%s %s", st.Event, st.Resource)
	if st.Name != "" {
		text += " " + objectText(st.Namespace, st.Name)
	}
	return text + "@" + st.ResourceVersion
}

// watchText is the watch of a delivery: "manager's watch 5 of sites".
func watchText(st gate.Step, client string) string {
	if client == "" {
		return fmt.Sprintf("watch %d of %s", st.Watch, st.Resource)
	}
	return fmt.Sprintf("%s's watch %d of %s", client, st.Watch, st.Resource)
}

// passedText lists the steps a reordering went ahead of: three at most,
// and how many more.
func passedText(ws []*waiter) string {
	var parts []string
	for _, w := range ws[:min(len(ws), 3)] {
		parts = append(parts, stepLine(w.step, w.client))
	}
	if len(ws) > 3 {
		parts = append(parts, fmt.Sprintf("%d more", len(ws)-3))
	}
	return strings.Join(parts, "; ")
}
