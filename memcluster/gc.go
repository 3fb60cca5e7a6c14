package memcluster

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The garbage collector follows kube-controller-manager's, run
// synchronously (see react.go). Its rules:
//
//   - An owner reference is solid when the owner exists (same kind, name,
//     UID, and namespace for a namespaced owner), dangling when it does
//     not, and waiting when the owner is being deleted with the
//     foregroundDeletion finalizer. References to kinds the cluster does
//     not store, and from a cluster-scoped object to a namespaced kind,
//     count as solid: upstream cannot resolve them and retries forever.
//   - An object with a solid owner is kept; its dangling and waiting
//     references are removed. Otherwise it is deleted: in the Foreground
//     if an owner is waiting and the object has dependents itself, else
//     as its own finalizers say (orphan, foregroundDeletion) or in the
//     Background.
//   - An object is looked at when one of its owners goes away, when it is
//     written with a reference to an owner that does not exist, and when
//     an owner starts waiting for its dependents.
//   - An object being deleted in the Foreground (deletionTimestamp and the
//     foregroundDeletion finalizer, which kube-apiserver adds) has its
//     dependents deleted, and loses the finalizer once no dependent with
//     blockOwnerDeletion on its reference remains.
//   - An object being deleted with the orphan finalizer has the references
//     to it removed from its dependents, then loses the finalizer.

// collector is the non-generic view of a Resource that the cluster and
// its built-in controllers need. Every method is called with the
// cluster's lock held.
type collector interface {
	kindGVK() schema.GroupVersionKind
	namespaced() bool
	// bookmarkLocked sends a bookmark at rv to the watchers that allow it.
	bookmarkLocked(rv uint64)
	objectLocked(key types.NamespacedName) (Object, bool)
	// deleteKeyLocked deletes an object as a client's Delete would.
	deleteKeyLocked(key types.NamespacedName, opts metav1.DeleteOptions) error
	// setOwnerRefsLocked stores the object with refs as its owner
	// references and nothing else changed, a patch of the garbage
	// collector's (recorded as kube-controller-manager's).
	setOwnerRefsLocked(key types.NamespacedName, refs []metav1.OwnerReference)
	// dropFinalizerLocked removes a finalizer, as a patch of the garbage
	// collector's; an object being deleted leaves storage with its last
	// one.
	dropFinalizerLocked(key types.NamespacedName, finalizer string)
	// keysInLocked returns the keys of the objects in namespace ns, sorted.
	keysInLocked(ns string) []types.NamespacedName
}

func beingDeleted(o metav1.Object) bool { return o.GetDeletionTimestamp() != nil }

func hasFinalizer(o metav1.Object, f string) bool { return slices.Contains(o.GetFinalizers(), f) }

// deletingDependents reports whether o waits for its dependents.
func deletingDependents(o metav1.Object) bool {
	return beingDeleted(o) && hasFinalizer(o, metav1.FinalizerDeleteDependents)
}

// deletionStartsWith reports whether obj has just started being deleted
// with finalizer f: it is now, and prev (nil on create) was not.
func deletionStartsWith(prev, obj Object, f string) bool {
	if !beingDeleted(obj) || !hasFinalizer(obj, f) {
		return false
	}
	return prev == nil || !beingDeleted(prev) || !hasFinalizer(prev, f)
}

func blocks(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// ownerState is what an owner reference resolves to.
type ownerState uint8

const (
	ownerUnknown ownerState = iota // a kind the cluster does not store: counts as solid
	ownerAbsent                    // dangling
	ownerPresent
)

// ownerLocked resolves an owner reference of an object in namespace ns.
func (c *Cluster) ownerLocked(ref metav1.OwnerReference, ns string) (objRef, Object, ownerState) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return objRef{}, nil, ownerUnknown
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	k, ok := c.kinds[gk]
	if !ok {
		return objRef{}, nil, ownerUnknown
	}
	key := types.NamespacedName{Name: ref.Name}
	if k.namespaced() {
		if ns == "" {
			return objRef{}, nil, ownerUnknown // a cluster-scoped object cannot have a namespaced owner
		}
		key.Namespace = ns
	}
	o, ok := k.objectLocked(key)
	if !ok || o.GetUID() != ref.UID {
		return objRef{}, nil, ownerAbsent
	}
	return objRef{gk: gk, key: key, uid: o.GetUID()}, o, ownerPresent
}

// gcObserveLocked queues the collector's work for a write.
func (c *Cluster) gcObserveLocked(ref objRef, typ watch.EventType, obj, prev Object) {
	if c.cfg.NoGarbageCollection {
		return
	}
	if typ == watch.Deleted {
		for _, dep := range c.dependentsOfLocked(ref.uid) {
			c.enqueueLocked(task{kind: taskAttempt, ref: dep})
		}
		// An owner waiting for its dependents may be done now.
		for _, o := range obj.GetOwnerReferences() {
			if oref, owner, st := c.ownerLocked(o, ref.key.Namespace); st == ownerPresent && deletingDependents(owner) {
				c.enqueueLocked(task{kind: taskAttempt, ref: oref})
			}
		}
		return
	}
	var oldRefs []metav1.OwnerReference
	if prev != nil {
		oldRefs = prev.GetOwnerReferences()
	}
	newRefs := obj.GetOwnerReferences()
	self := false
	for _, n := range newRefs {
		i := slices.IndexFunc(oldRefs, func(o metav1.OwnerReference) bool { return o.UID == n.UID })
		if i >= 0 {
			if o := oldRefs[i]; blocks(o) && !blocks(n) {
				c.enqueueOwnerIfWaitingLocked(n, ref.key.Namespace) // unblocked
			}
			continue
		}
		switch oref, owner, st := c.ownerLocked(n, ref.key.Namespace); {
		case st == ownerAbsent:
			self = true
		case st == ownerPresent && blocks(n) && deletingDependents(owner):
			c.enqueueLocked(task{kind: taskAttempt, ref: oref})
		}
	}
	for _, o := range oldRefs {
		if blocks(o) && !slices.ContainsFunc(newRefs, func(n metav1.OwnerReference) bool { return n.UID == o.UID }) {
			c.enqueueOwnerIfWaitingLocked(o, ref.key.Namespace) // removed
		}
	}
	if self {
		c.enqueueLocked(task{kind: taskAttempt, ref: ref})
	}
	switch {
	case deletionStartsWith(prev, obj, metav1.FinalizerOrphanDependents):
		c.enqueueLocked(task{kind: taskOrphan, ref: ref})
	case deletionStartsWith(prev, obj, metav1.FinalizerDeleteDependents):
		for _, dep := range c.dependentsOfLocked(ref.uid) {
			c.enqueueLocked(task{kind: taskAttempt, ref: dep})
		}
		c.enqueueLocked(task{kind: taskAttempt, ref: ref})
	}
}

func (c *Cluster) enqueueOwnerIfWaitingLocked(o metav1.OwnerReference, ns string) {
	if oref, owner, st := c.ownerLocked(o, ns); st == ownerPresent && deletingDependents(owner) {
		c.enqueueLocked(task{kind: taskAttempt, ref: oref})
	}
}

// attemptToDeleteLocked is the collector's look at one object.
func (c *Cluster) attemptToDeleteLocked(ref objRef) {
	k, obj, ok := c.objectLocked(ref)
	if !ok {
		return
	}
	if deletingDependents(obj) {
		c.processDeletingDependentsLocked(k, ref)
		return
	}
	if beingDeleted(obj) {
		return // on its way out; its dependents are looked at when it is gone
	}
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return
	}
	var solid, drop []types.UID
	waiting := false
	for _, r := range refs {
		_, owner, st := c.ownerLocked(r, ref.key.Namespace)
		switch {
		case st == ownerAbsent:
			drop = append(drop, r.UID)
		case st == ownerPresent && deletingDependents(owner):
			drop = append(drop, r.UID)
			waiting = true
		default:
			solid = append(solid, r.UID)
		}
	}
	switch {
	case len(solid) > 0:
		if len(drop) == 0 {
			return
		}
		k.setOwnerRefsLocked(ref.key, slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
			return slices.Contains(drop, r.UID)
		}))
	case waiting && len(c.dependents[ref.uid]) > 0:
		// A dependent already waiting for its own dependents could wait
		// for this object in turn: make this object's references
		// non-blocking first, as upstream does to break such cycles.
		for _, dep := range c.dependentsOfLocked(ref.uid) {
			if _, d, ok := c.objectLocked(dep); ok && deletingDependents(d) {
				c.unblockOwnersLocked(k, ref.key, refs)
				break
			}
		}
		c.gcDeleteLocked(k, ref, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(obj, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(obj, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		c.gcDeleteLocked(k, ref, policy)
	}
}

func (c *Cluster) unblockOwnersLocked(k collector, key types.NamespacedName, refs []metav1.OwnerReference) {
	next := slices.Clone(refs)
	changed := false
	for i := range next {
		if blocks(next[i]) {
			no := false
			next[i].BlockOwnerDeletion = &no
			changed = true
		}
	}
	if changed {
		k.setOwnerRefsLocked(key, next)
	}
}

// gcDeleteLocked deletes an object with a propagation policy and its UID
// as precondition. An error (the object is protected, say) leaves it:
// upstream would retry forever.
func (c *Cluster) gcDeleteLocked(k collector, ref objRef, policy metav1.DeletionPropagation) {
	uid := ref.uid
	_ = k.deleteKeyLocked(ref.key, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
}

// processDeletingDependentsLocked drops the foregroundDeletion finalizer
// of an owner once no blocking dependent is left, and otherwise has the
// blocking dependents looked at.
func (c *Cluster) processDeletingDependentsLocked(k collector, owner objRef) {
	var blocking []objRef
	var deps []Object
	for _, dep := range c.dependentsOfLocked(owner.uid) {
		_, d, ok := c.objectLocked(dep)
		if !ok {
			continue
		}
		if slices.ContainsFunc(d.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.uid && blocks(r) }) {
			blocking = append(blocking, dep)
			deps = append(deps, d)
		}
	}
	if len(blocking) == 0 {
		k.dropFinalizerLocked(owner.key, metav1.FinalizerDeleteDependents)
		return
	}
	for i, dep := range blocking {
		if !deletingDependents(deps[i]) {
			c.enqueueLocked(task{kind: taskAttempt, ref: dep})
		}
	}
}

// orphanDependentsLocked removes the references to an owner being
// deleted with the orphan finalizer, then the finalizer.
func (c *Cluster) orphanDependentsLocked(owner objRef) {
	k, _, ok := c.objectLocked(owner)
	if !ok {
		return
	}
	for _, dep := range c.dependentsOfLocked(owner.uid) {
		dk, d, ok := c.objectLocked(dep)
		if !ok {
			continue
		}
		dk.setOwnerRefsLocked(dep.key, slices.DeleteFunc(slices.Clone(d.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
			return r.UID == owner.uid
		}))
	}
	k.dropFinalizerLocked(owner.key, metav1.FinalizerOrphanDependents)
}

// Resource's side of the collector.

func (r *Resource[T]) kindGVK() schema.GroupVersionKind { return r.kind.GVK }

func (r *Resource[T]) namespaced() bool { return !r.kind.ClusterScoped }

func (r *Resource[T]) objectLocked(key types.NamespacedName) (Object, bool) {
	o, ok := r.objs[key]
	if !ok {
		return nil, false
	}
	return o, true
}

func (r *Resource[T]) deleteKeyLocked(key types.NamespacedName, opts metav1.DeleteOptions) error {
	_, _, err := r.deleteLocked(key, opts)
	return err
}

func (r *Resource[T]) setOwnerRefsLocked(key types.NamespacedName, refs []metav1.OwnerReference) {
	old, ok := r.objs[key]
	if !ok {
		return
	}
	next := deepCopy(old)
	if len(refs) == 0 {
		refs = nil
	}
	next.SetOwnerReferences(refs)
	if semanticallyEqual(old, next) {
		return
	}
	r.recordUpdateLocked(old, next, author{manager: controllerManager}, "")
	r.commitLocked(watch.Modified, next)
}

func (r *Resource[T]) dropFinalizerLocked(key types.NamespacedName, finalizer string) {
	old, ok := r.objs[key]
	if !ok || !hasFinalizer(old, finalizer) {
		return
	}
	next := deepCopy(old)
	fs := slices.DeleteFunc(slices.Clone(old.GetFinalizers()), func(f string) bool { return f == finalizer })
	if len(fs) == 0 {
		fs = nil
	}
	next.SetFinalizers(fs)
	r.recordUpdateLocked(old, next, author{manager: controllerManager}, "")
	if r.finalizedLocked(next) {
		r.removeLocked(next)
		return
	}
	r.commitLocked(watch.Modified, next)
}

func (r *Resource[T]) keysInLocked(ns string) []types.NamespacedName {
	var keys []types.NamespacedName
	for key := range r.objs {
		if key.Namespace == ns {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, cmpKey)
	return keys
}
