package memcluster

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The built-in controllers of kube-controller-manager that memcluster
// models (the garbage collector, the namespace controller and the
// disruption controller) run inside the cluster, synchronously: every
// stored write is observed (observeLocked), the work it causes is queued,
// and the queue is drained, first in first out, before the request that
// made the write returns. Their effects are deterministic and visible as
// soon as that request returns; what they write is observed in turn.
//
// A request that makes several writes holds the queue (holdLocked) and
// drains it when it is done (releaseLocked), so that the controllers see
// the request's outcome, not its steps, as they would see it through
// their informers.

// objRef names a stored object: its kind, its key and its UID.
type objRef struct {
	gk  schema.GroupKind
	key types.NamespacedName
	uid types.UID
}

func cmpRef(a, b objRef) int {
	return cmp.Or(cmp.Compare(a.gk.Group, b.gk.Group), cmp.Compare(a.gk.Kind, b.gk.Kind), cmpKey(a.key, b.key))
}

// taskKind says what a queued task does.
type taskKind uint8

const (
	// taskAttempt is the garbage collector's attemptToDeleteItem: delete
	// the object if its owners are gone or waiting for their dependents,
	// drop dangling owner references, or finish a foreground deletion.
	taskAttempt taskKind = iota
	// taskOrphan removes the owner references to the object from its
	// dependents, then its orphan finalizer.
	taskOrphan
	// taskNamespace is one sync of the namespace controller.
	taskNamespace
	// taskDisruption syncs the PodDisruptionBudgets of a namespace.
	taskDisruption
)

// task is a piece of queued work; equal tasks are queued once.
type task struct {
	kind taskKind
	ref  objRef // taskAttempt, taskOrphan
	name string // the namespace of taskNamespace and taskDisruption
}

// reactor is the queue of the built-in controllers' work. It is guarded
// by the cluster's lock.
type reactor struct {
	queue   []task
	queued  map[task]bool
	holds   int  // requests holding the queue
	running bool // drainLocked is running
}

func (c *Cluster) enqueueLocked(t task) {
	if c.react.queued[t] {
		return
	}
	if c.react.queued == nil {
		c.react.queued = map[task]bool{}
	}
	c.react.queued[t] = true
	c.react.queue = append(c.react.queue, t)
}

// holdLocked defers the queued work until the matching releaseLocked.
func (c *Cluster) holdLocked() { c.react.holds++ }

// releaseLocked ends a holdLocked and runs what was queued meanwhile.
func (c *Cluster) releaseLocked() {
	c.react.holds--
	c.drainLocked()
}

// drainLocked runs the queued work, and the work it causes, unless a
// request holds the queue or a drain is already running (a task's own
// writes queue more work for the loop below).
func (c *Cluster) drainLocked() {
	if c.react.holds > 0 || c.react.running {
		return
	}
	c.react.running = true
	for len(c.react.queue) > 0 {
		t := c.react.queue[0]
		c.react.queue[0] = task{}
		c.react.queue = c.react.queue[1:]
		delete(c.react.queued, t)
		switch t.kind {
		case taskAttempt:
			c.attemptToDeleteLocked(t.ref)
		case taskOrphan:
			c.orphanDependentsLocked(t.ref)
		case taskNamespace:
			c.syncNamespaceLocked(t.name)
		case taskDisruption:
			c.syncDisruptionLocked(t.name)
		}
	}
	c.react.queue = nil
	c.react.running = false
}

// observeLocked is told of every stored write, after it is stored: the
// object as written (for a Deleted event, as it was when it left) and the
// object it replaced (nil for an Added event).
func (c *Cluster) observeLocked(k collector, typ watch.EventType, obj, prev Object) {
	ref := objRef{gk: k.kindGVK().GroupKind(), key: objectKey(obj), uid: obj.GetUID()}
	var oldRefs, newRefs []metav1.OwnerReference
	if prev != nil {
		oldRefs = prev.GetOwnerReferences()
	}
	if typ != watch.Deleted {
		newRefs = obj.GetOwnerReferences()
	}
	if len(oldRefs) > 0 || len(newRefs) > 0 {
		c.indexOwnersLocked(ref, oldRefs, newRefs)
	}
	c.gcObserveLocked(ref, typ, obj, prev)
	c.namespaceObserveLocked(ref, typ, obj)
	c.disruptionObserveLocked(ref, obj)
	c.drainLocked()
}

// indexOwnersLocked updates the dependents index for an object whose
// owner references change from old to new.
func (c *Cluster) indexOwnersLocked(dep objRef, old, new []metav1.OwnerReference) {
	for _, o := range old {
		if slices.ContainsFunc(new, func(n metav1.OwnerReference) bool { return n.UID == o.UID }) {
			continue
		}
		if set := c.dependents[o.UID]; set != nil {
			delete(set, dep)
			if len(set) == 0 {
				delete(c.dependents, o.UID)
			}
		}
	}
	for _, n := range new {
		set := c.dependents[n.UID]
		if set == nil {
			set = map[objRef]struct{}{}
			c.dependents[n.UID] = set
		}
		set[dep] = struct{}{}
	}
}

// dependentsOfLocked returns the objects with an owner reference to uid,
// in a fixed order.
func (c *Cluster) dependentsOfLocked(uid types.UID) []objRef {
	set := c.dependents[uid]
	if len(set) == 0 {
		return nil
	}
	out := make([]objRef, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	slices.SortFunc(out, cmpRef)
	return out
}

// objectLocked returns the stored object ref names, if it is still the
// object with ref's UID.
func (c *Cluster) objectLocked(ref objRef) (collector, Object, bool) {
	k, ok := c.kinds[ref.gk]
	if !ok {
		return nil, nil, false
	}
	obj, ok := k.objectLocked(ref.key)
	if !ok || obj.GetUID() != ref.uid {
		return nil, nil, false
	}
	return k, obj, true
}
