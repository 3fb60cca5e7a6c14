package memcluster

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The garbage collector runs synchronously, inside the write that makes
// an object an orphan, so its effects are deterministic and visible as
// soon as that write returns. Rules, as upstream:
//
//   - An object is collected when it has owner references and every owner
//     is gone: no stored object of the referenced kind has the referenced
//     UID. References to kinds the cluster does not store are assumed to
//     be alive, so they never cause a deletion.
//   - Collection is a Background delete of the dependent, so pods are
//     deleted gracefully and a ReplicaSet's pods are collected in turn.
//   - An object created or updated with only dangling owner references is
//     collected at once.
//
// Unlike upstream, dangling references of an object that still has a live
// owner are left in place, and Foreground deletion is not modelled.

// collector is the non-generic view of a Resource the collector needs.
type collector interface {
	// collectLocked deletes the objects owned by owner whose owners are all gone.
	collectLocked(owner types.UID)
	// orphanLocked removes the owner references to owner.
	orphanLocked(owner types.UID)
	// bookmarkLocked sends a bookmark at rv to the watchers that allow it.
	bookmarkLocked(rv uint64)
}

func (c *Cluster) collectDependentsLocked(owner types.UID) {
	if c.cfg.NoGarbageCollection {
		return
	}
	for _, k := range c.order {
		k.collectLocked(owner)
	}
}

func (c *Cluster) orphanDependentsLocked(owner types.UID) {
	for _, k := range c.order {
		k.orphanLocked(owner)
	}
}

// ownerGoneLocked reports whether ref names a kind the cluster stores and
// no object of that kind has its UID.
func (c *Cluster) ownerGoneLocked(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	if _, known := c.kinds[gk]; !known {
		return false
	}
	have, ok := c.uids[ref.UID]
	return !ok || have != gk
}

func (c *Cluster) orphanedLocked(obj metav1.Object) bool {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 || obj.GetDeletionTimestamp() != nil {
		return false
	}
	for _, ref := range refs {
		if !c.ownerGoneLocked(ref) {
			return false
		}
	}
	return true
}

// collectIfOrphanedLocked deletes a freshly written object whose owners
// are all gone.
func (r *Resource[T]) collectIfOrphanedLocked(obj T) {
	if !r.c.cfg.NoGarbageCollection && r.c.orphanedLocked(obj) {
		r.collectKeyLocked(objectKey(obj))
	}
}

func (r *Resource[T]) collectKeyLocked(key types.NamespacedName) {
	bg := metav1.DeletePropagationBackground
	// The object exists and no precondition is set, so this cannot fail.
	if err := r.deleteLocked(key, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		panic("memcluster: garbage collection: " + err.Error())
	}
}

func (r *Resource[T]) collectLocked(owner types.UID) {
	for _, key := range r.ownedLocked(owner) {
		if obj, ok := r.objs[key]; ok && r.c.orphanedLocked(obj) {
			r.collectKeyLocked(key)
		}
	}
}

func (r *Resource[T]) orphanLocked(owner types.UID) {
	for _, key := range r.ownedLocked(owner) {
		next := deepCopy(r.objs[key])
		next.SetOwnerReferences(slices.DeleteFunc(next.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
			return ref.UID == owner
		}))
		r.recordUpdateLocked(r.objs[key], next, author{manager: controllerManager}, false) // the garbage collector's patch
		r.commitLocked(watch.Modified, next)
	}
}

// ownedLocked returns, sorted, the keys of the objects with a reference to owner.
func (r *Resource[T]) ownedLocked(owner types.UID) []types.NamespacedName {
	var keys []types.NamespacedName
	for key, obj := range r.objs {
		if slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == owner }) {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return keys
}
