package memcluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Delete deletes the object called name.
//
//   - opts.Preconditions (UID, ResourceVersion) that do not hold fail with
//     Conflict and delete nothing.
//   - opts.PropagationPolicy Background (the default) deletes dependents
//     (objects whose ownerReferences name this object's UID) once the
//     object is gone; Orphan first removes those ownerReferences;
//     Foreground is treated as Background (the owner does not wait for its
//     dependents).
//   - A pod bound to a node is deleted gracefully: it gets a
//     deletionTimestamp (now + grace period, opts.GracePeriodSeconds or
//     spec.terminationGracePeriodSeconds) and stays until its kubelet
//     confirms with a zero grace period. An unbound pod, or a zero grace
//     period, deletes at once. A second Delete may shorten the period.
//   - An object with finalizers gets a deletionTimestamp and stays until
//     an Update removes its last finalizer.
//   - The generation is bumped when the deletionTimestamp is first set.
func (cl Client[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	c := cl.r.c
	after, err := c.admit(ctx, VerbDelete, cl.r.kind.groupResource(), cl.ns, name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	err = cl.r.deleteLocked(cl.key(cl.ns, name), opts)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return after
}

func (r *Resource[T]) deleteLocked(key types.NamespacedName, opts metav1.DeleteOptions) error {
	old, ok := r.objs[key]
	if !ok {
		return apierrors.NewNotFound(r.kind.groupResource(), key.Name)
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != old.GetUID() {
			return apierrors.NewConflict(r.kind.groupResource(), key.Name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, old.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != old.GetResourceVersion() {
			return apierrors.NewConflict(r.kind.groupResource(), key.Name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
					*p.ResourceVersion, old.GetResourceVersion()))
		}
	}
	orphan := opts.OrphanDependents != nil && *opts.OrphanDependents
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan:
			orphan = true
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
			orphan = false
		default:
			return apierrors.NewBadRequest(fmt.Sprintf("unsupported propagationPolicy %q", *p))
		}
	}
	if orphan {
		r.c.orphanDependentsLocked(old.GetUID())
	}
	var grace int64
	if r.kind.GracePeriod != nil {
		grace = r.kind.GracePeriod(old, opts.GracePeriodSeconds)
	}
	now := r.c.now()
	if old.GetDeletionTimestamp() != nil {
		cur := old.GetDeletionGracePeriodSeconds()
		if cur == nil || grace >= *cur {
			return nil // already deleting, no sooner than asked
		}
		next := deepCopy(old)
		ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		next.SetDeletionTimestamp(&ts)
		next.SetDeletionGracePeriodSeconds(&grace)
		if r.finalizedLocked(next) {
			r.removeLocked(next)
			return nil
		}
		r.commitLocked(watch.Modified, next)
		return nil
	}
	next := deepCopy(old)
	if r.kind.PrepareDelete != nil {
		r.kind.PrepareDelete(next)
		if next.GetDeletionTimestamp() != nil {
			if r.finalizedLocked(next) {
				r.removeLocked(next)
			} else {
				r.commitLocked(watch.Modified, next)
			}
			return nil
		}
	}
	if grace == 0 && len(next.GetFinalizers()) == 0 {
		r.removeLocked(next)
		return nil
	}
	ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
	next.SetDeletionTimestamp(&ts)
	next.SetDeletionGracePeriodSeconds(&grace)
	if g := next.GetGeneration(); g > 0 {
		next.SetGeneration(g + 1)
	}
	r.commitLocked(watch.Modified, next)
	return nil
}
