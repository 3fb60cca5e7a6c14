package replicaset

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podFact is what a sync learns about one listed pod from the pod alone,
// given the ReplicaSet's identity, selector and template labels: everything
// [Reconciler.claim] reads from the pod except the time-dependent
// availability, which is judged from readySince at each sync.
type podFact struct {
	pod        weak.Pointer[corev1.Pod] // the pod the facts are of, not kept alive
	readySince time.Time                // the Ready condition's LastTransitionTime when factReady
	bits       factBits
}

type factBits uint8

const (
	factCandidate   factBits = 1 << iota // owned by the ReplicaSet or an orphan, in its namespace (ownedOrOrphan)
	factControlled                       // has a controller reference
	factMatch                            // matches the selector
	factLabeled                          // carries every template label
	factActive                           // IsPodActive
	factTerminating                      // IsPodTerminating
	factReady                            // its first Ready condition is True
)

func (f *podFact) has(b factBits) bool { return f.bits&b != 0 }

// learnPod sets f to the facts of p for rs, whose selector and template
// labels test answers for. It writes f in place: the facts are read on the
// way, in the claim loop, and a copy would cost as much as the rest.
func learnPod(f *podFact, rs *appsv1.ReplicaSet, test *podLabelTest, p *corev1.Pod) {
	f.bits = 0
	ref := controllerOf(p)
	if !ownedOrOrphan(rs, p, ref) {
		return
	}
	bits := factCandidate
	if ref != nil {
		bits |= factControlled
	}
	match, labeled := test.test(p.Labels)
	if match {
		bits |= factMatch
	}
	if labeled {
		bits |= factLabeled
	}
	if IsPodActive(p) {
		bits |= factActive
	} else if IsPodTerminating(p) {
		bits |= factTerminating
	}
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		bits |= factReady
		f.readySince = c.LastTransitionTime.Time
	}
	f.bits = bits
}

// podMemo holds the facts the last sync of one ReplicaSet learnt, in the
// order it listed the pods. The pods come from an informer cache, whose
// objects are never modified: a new version of a pod is a new object. So
// when the pod at a position of this sync's lists is the very object the
// memo holds there, its facts still hold, and the sync reads the memo
// instead of the pod: a settled ReplicaSet's sync touches none of its
// pods, and after one pod changes, it reads that one. The facts depend on
// the ReplicaSet too (UID, name, namespace, selector, template labels); a
// memo learnt for other values of those is dropped.
//
// The memo refers to the pods weakly: it keeps none alive, and a pod
// object that is gone is never taken for another one allocated at its
// address (weak.Pointer.Value is nil then). Only ReplicaSets that list
// at least memoMinPods pods have one: learning a few pods costs less than
// remembering them while they change.
type podMemo struct {
	busy            bool // a sync is using it
	uid             types.UID
	name, namespace string
	sel             *labelMatcher
	tpl             labelSet
	facts           []podFact
}

// memoMinPods is the number of listed pods from which a ReplicaSet's
// syncs remember what they learn (a variable for the tests).
var memoMinPods = 64

// podMemos are the Reconciler's memos, by ReplicaSet. Safe for concurrent
// use.
type podMemos struct {
	mu  sync.Mutex
	m   map[types.NamespacedName]*podMemo
	any atomic.Bool // m may have entries: without, forget takes no lock
}

// take returns the memo of key for a sync of rs with test that lists n
// pods, emptied if it was learnt for something else, or nil when another
// sync of key holds it (the caller then learns every pod). Give it back
// with give.
func (c *podMemos) take(key types.NamespacedName, rs *appsv1.ReplicaSet, test *podLabelTest, n int) *podMemo {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m[key]
	if m == nil {
		if c.m == nil {
			c.m = make(map[types.NamespacedName]*podMemo)
		}
		m = &podMemo{}
		c.m[key] = m
		c.any.Store(true)
	}
	if m.busy {
		return nil
	}
	m.busy = true
	if m.uid != rs.UID || m.name != rs.Name || m.namespace != rs.Namespace ||
		!m.sel.equal(test.sel) || !m.tpl.equal(&test.tpl) {
		clear(m.facts)
		m.facts = m.facts[:0]
		m.uid, m.name, m.namespace, m.sel, m.tpl = rs.UID, rs.Name, rs.Namespace, test.sel, test.tpl
	}
	if n > len(m.facts) {
		m.facts = slices.Grow(m.facts, n-len(m.facts)) // one allocation at most
	}
	return m
}

// give returns m, which now holds the facts of its first n positions.
func (c *podMemos) give(m *podMemo, n int) {
	if m == nil {
		return
	}
	switch {
	case n == 0:
		m.facts = nil
	case cap(m.facts) > 4*n+64: // the ReplicaSet shrank
		m.facts = slices.Clone(m.facts[:n])
	default:
		clear(m.facts[n:])
		m.facts = m.facts[:n]
	}
	c.mu.Lock()
	m.busy = false
	c.mu.Unlock()
}

func (c *podMemos) forget(key types.NamespacedName) {
	if !c.any.Load() {
		return
	}
	c.mu.Lock()
	delete(c.m, key)
	c.any.Store(len(c.m) > 0)
	c.mu.Unlock()
}

// known returns the facts of the pod p listed at position i if the memo
// holds them, or nil. A nil memo holds nothing.
func (m *podMemo) known(i int, p *corev1.Pod) *podFact {
	if m != nil && i < len(m.facts) && m.facts[i].pod.Value() == p {
		return &m.facts[i]
	}
	return nil
}

// learn learns the facts of the pod p listed at position i and returns
// them, kept in the memo, or in scratch for a nil memo. They stay valid
// until the next call.
func (m *podMemo) learn(i int, p *corev1.Pod, rs *appsv1.ReplicaSet, test *podLabelTest, scratch *podFact) *podFact {
	f := scratch
	if m != nil {
		if i == len(m.facts) {
			m.facts = append(m.facts, podFact{})
		}
		f = &m.facts[i]
		f.pod = weak.Make(p)
	}
	learnPod(f, rs, test, p)
	return f
}

// equal reports whether m and o match the same label maps; false may be
// a false negative (the same requirements in another form).
func (m *labelMatcher) equal(o *labelMatcher) bool {
	if m == o {
		return true
	}
	if m == nil || o == nil || m.nothing != o.nothing || m.generic != nil || o.generic != nil || len(m.reqs) != len(o.reqs) {
		return false
	}
	for i := range m.reqs {
		a, b := &m.reqs[i], &o.reqs[i]
		if a.key != b.key || a.op != b.op || !slices.Equal(a.values, b.values) {
			return false
		}
	}
	return true
}

// equal reports whether s and o hold the same labels.
func (s *labelSet) equal(o *labelSet) bool {
	if s.big != nil || o.big != nil {
		return s.big != nil && o.big != nil && maps.Equal(s.big, o.big)
	}
	if s.n != o.n {
		return false
	}
outer:
	for i := range s.n {
		for j := range o.n {
			if s.small[i] == o.small[j] {
				continue outer
			}
		}
		return false
	}
	return true
}
