package replicaset

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelMatcher tests label maps against a selector parsed by
// metav1.LabelSelectorAsSelector, with exactly the semantics of that
// selector's Matches, but reading the map directly instead of through the
// labels.Labels interface. The zero value matches everything.
type labelMatcher struct {
	nothing bool            // a nil LabelSelector: nothing matches
	reqs    []labelReq      // all must hold
	generic labels.Selector // set when some operator is not compiled: used instead of reqs
}

// labelReq is one compiled requirement. For opIn the label must be present
// with one of values; for opNotIn it must be absent or have none of them.
type labelReq struct {
	key    string
	op     labelOp
	values []string
}

type labelOp uint8

const (
	opIn    labelOp = iota // In, =, ==
	opNotIn                // NotIn, !=
	opExists
	opDoesNotExist
)

// compileSelector compiles sel, a selector returned by
// metav1.LabelSelectorAsSelector. Operators it does not know (Gt, Lt) make
// the matcher defer to sel itself.
func compileSelector(sel labels.Selector) labelMatcher {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return labelMatcher{nothing: true}
	}
	m := labelMatcher{reqs: make([]labelReq, 0, len(reqs))}
	for i := range reqs {
		r := &reqs[i]
		c := labelReq{key: r.Key(), values: r.ValuesUnsorted()}
		switch r.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			c.op = opIn
		case selection.NotIn, selection.NotEquals:
			c.op = opNotIn
		case selection.Exists:
			c.op = opExists
		case selection.DoesNotExist:
			c.op = opDoesNotExist
		default:
			return labelMatcher{generic: sel}
		}
		m.reqs = append(m.reqs, c)
	}
	return m
}

// matches reports whether l satisfies every requirement; a nil map is an
// empty set of labels.
// Matches is matches, for internal/validate.
func (m *labelMatcher) Matches(l map[string]string) bool { return m.matches(l) }

func (m *labelMatcher) matches(l map[string]string) bool {
	switch {
	case m.nothing:
		return false
	case m.generic != nil:
		return m.generic.Matches(labels.Set(l))
	}
	for i := range m.reqs {
		if !m.reqs[i].holds(l) {
			return false
		}
	}
	return true
}

func (r *labelReq) holds(l map[string]string) bool {
	v, ok := l[r.key]
	switch r.op {
	case opIn:
		return ok && r.has(v)
	case opNotIn:
		return !ok || !r.has(v)
	case opExists:
		return ok
	default: // opDoesNotExist
		return !ok
	}
}

func (r *labelReq) has(v string) bool {
	for _, w := range r.values {
		if w == v {
			return true
		}
	}
	return false
}

// impliedBy reports whether every label map holding all of tpl's labels
// matches: each requirement must be settled by tpl alone. A key that must be
// absent never is, since a superset may carry it.
func (m *labelMatcher) impliedBy(tpl map[string]string) bool {
	if m.nothing || m.generic != nil {
		return false
	}
	for i := range m.reqs {
		r := &m.reqs[i]
		v, ok := tpl[r.key]
		switch r.op {
		case opIn:
			ok = ok && r.has(v)
		case opNotIn:
			ok = ok && !r.has(v)
		case opDoesNotExist:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return true
}

// podLabelTest answers, for one sync, the two label questions asked of each
// pod: does it match the ReplicaSet's selector (to claim it), and does it
// carry every template label (FullyLabeledReplicas). When the template alone
// satisfies the selector, a fully labeled pod is known to match and the
// selector is not consulted.
type podLabelTest struct {
	sel     *labelMatcher
	tpl     labelSet
	implied bool
}

func newPodLabelTest(sel *labelMatcher, template map[string]string) podLabelTest {
	return podLabelTest{sel: sel, tpl: newLabelSet(template), implied: sel.impliedBy(template)}
}

// test returns whether l matches the selector and whether it holds every
// template label.
func (t *podLabelTest) test(l map[string]string) (match, labeled bool) {
	labeled = t.tpl.subsetOf(l)
	if labeled && t.implied {
		return true, true
	}
	return t.sel.matches(l), labeled
}
