package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Delete deletes the object called name, as kube-apiserver's registries
// do:
//
//   - opts is validated as kube-apiserver does (OrphanDependents and
//     PropagationPolicy together, or an unknown policy, are Invalid).
//     Preconditions (UID, ResourceVersion) that do not hold fail with
//     Conflict and delete nothing.
//   - Propagation: Background deletes the object now and its dependents
//     (objects whose ownerReferences name it) after it is gone; Foreground
//     adds the foregroundDeletion finalizer and the object stays, with a
//     deletionTimestamp, until the garbage collector has deleted the
//     dependents that block it (blockOwnerDeletion); Orphan adds the
//     orphan finalizer and the object stays until the collector has
//     removed the references to it from its dependents. Without a policy,
//     the object's own orphan or foregroundDeletion finalizer decides, then
//     the kind's default: Background, but Orphan for batch/v1 Jobs and
//     core/v1 ReplicationControllers, and none for Events (whose deletion
//     adds no finalizer). The legacy OrphanDependents true is Orphan,
//     false is Background.
//   - A pod bound to a node is deleted gracefully: it gets a
//     deletionTimestamp (now + grace period, opts.GracePeriodSeconds or
//     spec.terminationGracePeriodSeconds) and stays until its kubelet
//     confirms with a zero grace period. An unbound or finished pod, or a
//     zero grace period, goes at once (after a write that sets its
//     deletionTimestamp, as kube-apiserver's). A second Delete may only
//     shorten the period, and changes nothing else while it runs.
//   - An object with finalizers gets a deletionTimestamp and stays until
//     an update removes its last finalizer.
//   - The generation is bumped when the deletionTimestamp is first set.
//   - Namespaces have kube-apiserver's lifecycle: the first Delete sets
//     the Terminating phase (and the finalizers of the policy), and the
//     namespace controller deletes its content, then finalizes it; a Delete
//     of a finalized namespace deletes it. default, kube-system and
//     kube-public cannot be deleted (Forbidden).
func (cl Client[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	_, _, err := cl.delete(ctx, name, opts)
	return err
}

// delete is Delete, returning a copy of the object as the request left it
// and whether it is gone (see deleteLocked).
func (cl Client[T]) delete(ctx context.Context, name string, opts metav1.DeleteOptions) (T, bool, error) {
	var zero T
	c := cl.r.c
	after, err := c.admit(ctx, gate.VerbDelete, cl.r.kind.groupResource(), cl.ns, name)
	if err != nil {
		return zero, false, err
	}
	key := cl.key(cl.ns, name)
	var out T
	var gone bool
	if c.admitting() && admitsDelete(cl.r, key, opts) {
		out, gone, err = cl.deleteAdmitted(ctx, key, opts)
	} else {
		c.mu.Lock()
		c.holdLocked()
		out, gone, err = cl.r.deleteLocked(key, opts)
		c.releaseLocked()
		c.mu.Unlock()
	}
	if err != nil {
		return zero, false, err
	}
	if after != nil {
		return zero, false, after
	}
	return deepCopy(out), gone, nil
}

// admitsDelete reports whether a delete with opts of the object at key
// of r gets to admission: kube-apiserver refuses bad options, and its
// NamespaceLifecycle the deletion of an immortal namespace, first.
func admitsDelete[T Object](r *Resource[T], key types.NamespacedName, opts metav1.DeleteOptions) bool {
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return false
	}
	return any(r) != any(r.c.namespaces) || !immortalNamespace(key.Name)
}

// returnsDeletedObject are the registries that answer a delete that
// removed the object with the object rather than a Status.
var returnsDeletedObject = map[schema.GroupResource]bool{
	{Resource: "pods"}: true, {Resource: "namespaces"}: true, {Resource: "services"}: true,
	{Resource: "serviceaccounts"}: true, {Resource: "persistentvolumes"}: true,
	{Resource: "persistentvolumeclaims"}: true, {Resource: "resourcequotas"}: true,
	{Resource: "podtemplates"}: true, {Group: "storage.k8s.io", Resource: "storageclasses"}: true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}: true, {Group: "storage.k8s.io", Resource: "csinodes"}: true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:       true,
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}: true,
}

// gcPolicy is a registry's default propagation policy.
type gcPolicy uint8

const (
	gcDeleteDependents gcPolicy = iota // Background
	gcOrphanDependents                 // Orphan
	gcUnsupported                      // no finalizer is ever added
)

// defaultGCPolicies are kube-apiserver's registries that do not default
// to Background, by the version they are served at.
var defaultGCPolicies = map[schema.GroupVersionKind]gcPolicy{
	{Group: "batch", Version: "v1", Kind: "Job"}:                gcOrphanDependents,
	{Group: "batch", Version: "v1beta1", Kind: "CronJob"}:       gcOrphanDependents,
	{Version: "v1", Kind: "ReplicationController"}:              gcOrphanDependents,
	{Version: "v1", Kind: "Event"}:                              gcUnsupported,
	{Group: "events.k8s.io", Version: "v1", Kind: "Event"}:      gcUnsupported,
	{Group: "events.k8s.io", Version: "v1beta1", Kind: "Event"}: gcUnsupported,
}

// deleteLocked carries out a delete request. It returns the object as the
// request left it: still stored, being deleted (gone is false), or as it
// was last stored before it left (gone is true).
func (r *Resource[T]) deleteLocked(key types.NamespacedName, opts metav1.DeleteOptions) (out T, gone bool, err error) {
	var zero T
	if errs := metav1validation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return zero, false, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	isNamespace := any(r) == any(r.c.namespaces)
	if isNamespace && immortalNamespace(key.Name) {
		// NamespaceLifecycle admission, which runs before the registry.
		return zero, false, apierrors.NewForbidden(r.kind.groupResource(), key.Name, fmt.Errorf("this namespace may not be deleted"))
	}
	old, ok := r.objs[key]
	if !ok {
		return zero, false, apierrors.NewNotFound(r.kind.groupResource(), key.Name)
	}
	if isNamespace {
		ns, gone, err := r.c.deleteNamespaceLocked(key, opts)
		if ns == nil {
			return zero, gone, err
		}
		return any(ns).(T), gone, err
	}
	return r.storeDeleteLocked(old, opts)
}

// storeDeleteLocked is the deletion of kube-apiserver's generic registry
// store: graceful deletion, finalizers, and the propagation finalizers.
func (r *Resource[T]) storeDeleteLocked(old T, opts metav1.DeleteOptions) (T, bool, error) {
	var zero T
	if p := opts.Preconditions; p != nil {
		gr := schema.GroupResource{Group: r.kind.GVK.Group, Resource: r.kind.GVK.Kind}
		if p.UID != nil && *p.UID != old.GetUID() {
			return zero, false, apierrors.NewConflict(gr, old.GetName(),
				fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, old.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != old.GetResourceVersion() {
			return zero, false, apierrors.NewConflict(gr, old.GetName(),
				fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, old.GetResourceVersion()))
		}
	}
	now := r.c.now()
	next := deepCopy(old)
	if r.kind.PrepareDelete != nil && old.GetDeletionTimestamp() == nil {
		r.kind.PrepareDelete(next)
		if next.GetDeletionTimestamp() != nil { // a deletion of its own
			if r.finalizedLocked(next) {
				return r.removeLocked(next), true, nil
			}
			return r.commitLocked(watch.Modified, next), false, nil
		}
	}
	graceful := false
	var lastGrace int64
	if r.kind.GracePeriod != nil {
		period, pending, ok := r.gracefulDelete(old, next, opts.GracePeriodSeconds, now)
		if pending {
			return old, false, nil // already deleting, no sooner than asked: nothing changes
		}
		graceful, lastGrace = ok, period
	}
	fins, changed := r.propagationFinalizers(old.GetFinalizers(), opts)
	if changed {
		next.SetFinalizers(fins)
	}
	pendingFinalizers := len(next.GetFinalizers()) > 0
	if !graceful {
		if !pendingFinalizers {
			r.removeLocked(deepCopy(old))
			return old, true, nil
		}
		markDeleting(next, now)
	}
	stored := old
	if !semanticallyEqual(old, next) {
		stored = r.commitLocked(watch.Modified, next)
	}
	if pendingFinalizers || lastGrace > 0 {
		return stored, false, nil
	}
	r.removeLocked(deepCopy(stored))
	return stored, true, nil
}

// gracefulDelete applies a graceful kind's grace period to next (a copy of
// old), as kube-apiserver's BeforeDelete does. pending reports a graceful
// deletion already running that the request does not shorten; graceful
// whether next is a graceful deletion (to be stored) with period seconds.
func (r *Resource[T]) gracefulDelete(old, next T, requested *int64, now metav1.Time) (period int64, pending, graceful bool) {
	if requested != nil && *requested < 0 {
		one := int64(1)
		requested = &one
	}
	ts := old.GetDeletionTimestamp()
	if ts == nil {
		period = r.kind.GracePeriod(old, requested)
		at := metav1.NewTime(now.Add(time.Duration(period) * time.Second))
		next.SetDeletionTimestamp(&at)
		next.SetDeletionGracePeriodSeconds(&period)
		if g := next.GetGeneration(); g > 0 {
			next.SetGeneration(g + 1)
		}
		return period, false, true
	}
	cur := old.GetDeletionGracePeriodSeconds()
	switch {
	case cur == nil || *cur == 0:
		return 0, false, false // deleted once the finalizers are gone
	case requested == nil || *requested >= *cur:
		return 0, true, false
	}
	period = *requested
	at := metav1.NewTime(ts.Add(-time.Duration(*cur) * time.Second).Add(time.Duration(period) * time.Second))
	if at.Before(&now) {
		at = now
		if period != 0 {
			period = 1 // the grace period is over: still graceful, as short as can be
		}
	}
	next.SetDeletionTimestamp(&at)
	next.SetDeletionGracePeriodSeconds(&period)
	return period, false, true
}

// markDeleting is what kube-apiserver stores for a non-graceful deletion
// held by finalizers: a deletionTimestamp (kept if earlier), no grace
// period, and a generation bump when the deletion starts.
func markDeleting(obj Object, now metav1.Time) {
	ts := obj.GetDeletionTimestamp()
	if ts == nil && obj.GetGeneration() > 0 {
		obj.SetGeneration(obj.GetGeneration() + 1)
	}
	if ts == nil || ts.After(now.Time) {
		obj.SetDeletionTimestamp(&now)
	}
	var zero int64
	obj.SetDeletionGracePeriodSeconds(&zero)
}

// propagationFinalizers returns the finalizers a delete with opts leaves
// on an object that has fins, and whether they differ from fins (as a
// set): kube-apiserver's deletionFinalizersForGarbageCollection.
func (r *Resource[T]) propagationFinalizers(fins []string, opts metav1.DeleteOptions) ([]string, bool) {
	if r.gcPolicy == gcUnsupported {
		return fins, false
	}
	orphan, foreground := r.shouldOrphan(fins, opts), shouldForeground(fins, opts)
	next := make([]string, 0, len(fins)+1)
	for _, f := range fins {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			next = append(next, f)
		}
	}
	if orphan {
		next = append(next, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		next = append(next, metav1.FinalizerDeleteDependents)
	}
	if sameSet(fins, next) {
		return fins, false
	}
	if len(next) == 0 {
		next = nil
	}
	return next, true
}

func (r *Resource[T]) shouldOrphan(fins []string, opts metav1.DeleteOptions) bool {
	if o := opts.OrphanDependents; o != nil { //nolint:staticcheck // the legacy option is still served
		return *o
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan:
			return true
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
			return false
		}
	}
	for _, f := range fins {
		switch f {
		case metav1.FinalizerOrphanDependents:
			return true
		case metav1.FinalizerDeleteDependents:
			return false
		}
	}
	return r.gcPolicy == gcOrphanDependents
}

func shouldForeground(fins []string, opts metav1.DeleteOptions) bool {
	if opts.OrphanDependents != nil { //nolint:staticcheck // the legacy option is still served
		return false
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationForeground:
			return true
		case metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
			return false
		}
	}
	return slices.Contains(fins, metav1.FinalizerDeleteDependents)
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}
