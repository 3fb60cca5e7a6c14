package memcluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// maxGenerateNameTries bounds the retries after a generated name collides,
// as the apiserver's RetryGenerateName does.
const maxGenerateNameTries = 8

// createLocked stores a new object, written by a, and returns a copy of
// what was stored.
func (r *Resource[T]) createLocked(obj T, ns string, a author) (T, error) {
	return r.createWithUIDLocked(obj, ns, a, "")
}

// createWithUIDLocked is createLocked with the object's UID, or a new one
// from the cluster's random source if uid is "".
func (r *Resource[T]) createWithUIDLocked(obj T, ns string, a author, uid types.UID) (T, error) {
	var zero T
	in, err := r.roundTrip(obj)
	if err != nil {
		return zero, err
	}
	if in.GetResourceVersion() != "" {
		return zero, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if !r.kind.ClusterScoped {
		switch {
		case in.GetNamespace() == "" && ns == "":
			in.SetNamespace(metav1.NamespaceDefault)
		case in.GetNamespace() == "":
			in.SetNamespace(ns)
		case ns != "" && in.GetNamespace() != ns:
			return zero, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		in.SetNamespace("")
	}
	if !r.kind.ClusterScoped {
		if err := r.c.admitNamespaceLocked(r.kind.groupResource(), in); err != nil {
			return zero, err
		}
	}
	if in.GetName() == "" && in.GetGenerateName() != "" {
		if err := r.generateNameLocked(in); err != nil {
			return zero, err
		}
	}
	managed := r.recordCreateLocked(in, a)
	if uid == "" {
		uid = r.c.newUIDLocked()
	}
	in.SetUID(uid)
	in.SetCreationTimestamp(r.c.now())
	if r.kind.PrepareCreate != nil {
		r.kind.PrepareCreate(in)
	}
	if r.kind.Generation != nil {
		in.SetGeneration(1)
	}
	in.SetDeletionTimestamp(nil)
	in.SetDeletionGracePeriodSeconds(nil)
	in.SetManagedFields(managed)
	if r.kind.Default != nil {
		r.kind.Default(in)
	}
	var errs field.ErrorList
	if !r.kind.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessor(in, !r.kind.ClusterScoped, r.kind.nameValidator(), field.NewPath("metadata"))
	}
	if r.kind.Validate != nil {
		var none T
		errs = append(errs, r.kind.Validate(in, none)...)
	}
	if len(errs) > 0 {
		return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
	}
	if _, exists := r.objs[objectKey(in)]; exists && r.c.staging == nil {
		// (A staged create checks when it commits, after the validating
		// stage of admission, as kube-apiserver's storage does.)
		return zero, apierrors.NewAlreadyExists(r.kind.groupResource(), in.GetName())
	}
	if r.kind.toStorage != nil {
		if in, err = r.kind.toStorage(in); err != nil {
			return zero, err
		}
	}
	stored := r.commitLocked(watch.Added, in)
	return deepCopy(stored), nil
}

func (r *Resource[T]) generateNameLocked(obj T) error {
	base := obj.GetGenerateName()
	if len(base) > 58 { // 63 minus the 5-character suffix
		base = base[:58]
	}
	for range maxGenerateNameTries {
		name := base + r.c.nameSuffixLocked()
		if _, taken := r.objs[types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}]; !taken {
			obj.SetName(name)
			return nil
		}
	}
	return apierrors.NewAlreadyExists(r.kind.groupResource(), base+"*")
}

// checkPreconditionsLocked returns the stored object that in replaces, or
// NotFound, or Conflict for a stale resourceVersion or another UID.
func (r *Resource[T]) checkPreconditionsLocked(in T) (T, error) {
	var zero T
	old, ok := r.objs[objectKey(in)]
	if !ok {
		return zero, apierrors.NewNotFound(r.kind.groupResource(), in.GetName())
	}
	if uid := in.GetUID(); uid != "" && uid != old.GetUID() {
		return zero, apierrors.NewConflict(r.kind.groupResource(), in.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.GetUID()))
	}
	if rv := in.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return zero, apierrors.NewConflict(r.kind.groupResource(), in.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return old, nil
}

// updateLocked writes metadata and spec, by a; in must be a private,
// round-tripped copy.
func (r *Resource[T]) updateLocked(in T, a author) (T, error) {
	var zero T
	stored, err := r.checkPreconditionsLocked(in)
	if err != nil {
		return zero, err
	}
	if r.kind.RequireResourceVersion && in.GetResourceVersion() == "" {
		// kube-apiserver names the resource here, not the kind.
		gr := r.kind.groupResource()
		return zero, apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: gr.Resource}, in.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
	}
	old := stored
	if r.kind.asVersionOf != nil {
		old = r.kind.asVersionOf(stored, in)
	}
	managed, recorded := r.recordUpdateAsSentLocked(old, in, a)
	if r.kind.PrepareUpdate != nil {
		if errs := r.kind.PrepareUpdate(in, old); len(errs) > 0 {
			return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
		}
	}
	// Defaults first, as kube-apiserver applies them when it decodes the
	// request: then the server-owned fields and the status are kept.
	if r.kind.Default != nil {
		r.kind.Default(in)
	}
	in.SetUID(old.GetUID())
	in.SetCreationTimestamp(old.GetCreationTimestamp())
	in.SetDeletionTimestamp(old.GetDeletionTimestamp())
	in.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	in.SetGeneration(old.GetGeneration())
	in.SetResourceVersion(old.GetResourceVersion())
	if r.kind.CopyStatus != nil {
		r.kind.CopyStatus(in, old)
	}
	if recorded {
		in.SetManagedFields(managed)
	} else {
		r.recordUpdateLocked(old, in, a, "")
	}
	var errs field.ErrorList
	if !r.kind.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessorUpdate(in, old, field.NewPath("metadata"))
		errs = append(errs, apivalidation.ValidateObjectMetaAccessor(in, !r.kind.ClusterScoped, r.kind.nameValidator(), field.NewPath("metadata"))...)
	}
	if r.kind.Validate != nil {
		errs = append(errs, r.kind.Validate(in, old)...)
	}
	if old.GetDeletionTimestamp() != nil {
		// kube-apiserver reports this twice, beside the strategy's check (the
		// two errors are the same, and the answer's message says it once).
		errs = append(errs, apivalidation.ValidateNoNewFinalizers(in.GetFinalizers(), old.GetFinalizers(), field.NewPath("metadata", "finalizers"))...)
	}
	if len(errs) > 0 {
		return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
	}
	if r.kind.Generation != nil && !apiequality.Semantic.DeepEqual(r.kind.Generation(in), r.kind.Generation(old)) {
		in.SetGeneration(old.GetGeneration() + 1)
	}
	if r.kind.toStorage != nil {
		if in, err = r.kind.toStorage(in); err != nil {
			return zero, err
		}
	}
	if semanticallyEqual(stored, in) {
		return deepCopy(stored), nil
	}
	if r.finalizedLocked(in) {
		return deepCopy(r.removeLocked(in)), nil
	}
	out := r.commitLocked(watch.Modified, in)
	return deepCopy(out), nil
}

// updateStatusLocked writes the status of in and nothing else, by a.
func (r *Resource[T]) updateStatusLocked(in T, a author) (T, error) {
	var zero T
	if r.kind.CopyStatus == nil {
		return zero, apierrors.NewMethodNotSupported(r.kind.groupResource(), "update/status")
	}
	stored, err := r.checkPreconditionsLocked(in)
	if err != nil {
		return zero, err
	}
	if r.kind.statusUpdate == nil {
		return r.updateCustomStatusLocked(stored, in, a)
	}
	old := stored
	next := r.kind.statusUpdate(old, in)
	if r.kind.statusKeep != nil {
		r.kind.statusKeep(next, old)
	}
	same := r.kind.statusEqual(old, next)
	if same && !a.applied {
		return deepCopy(old), nil
	}
	if a.applied {
		next.SetManagedFields(in.GetManagedFields())
	}
	if !a.statusOnly && sameMetadata(old, next) {
		// Only the status changes: its record leaves the metadata out of
		// both objects compared (see author.statusOnly).
		r.checkBareStatusLocked(old, next, a)
		a.statusOnly = true
	}
	r.recordUpdateLocked(old, next, a, "status")
	if same && managedFieldsEqual(old, next) {
		return deepCopy(old), nil
	}
	return deepCopy(r.commitLocked(watch.Modified, next)), nil
}

// updateCustomStatusLocked is [Resource.updateStatusLocked] for a kind
// without statusUpdate (kinds of other Go types, custom kinds): in is
// defaulted as kube-apiserver decodes it, the status is written into the
// stored object as seen in the version of in, validated, recorded, and
// converted back to the stored version; a write that leaves the stored
// object as it was is not stored.
func (r *Resource[T]) updateCustomStatusLocked(stored, in T, a author) (T, error) {
	var zero T
	if r.kind.Default != nil {
		r.kind.Default(in)
	}
	old := stored
	if r.kind.asVersionOf != nil {
		old = r.kind.asVersionOf(stored, in)
	}
	next := deepCopy(old)
	r.kind.CopyStatus(next, in)
	if r.kind.StatusMeta != nil {
		r.kind.StatusMeta(next, in)
	}
	if r.kind.statusKeep != nil {
		r.kind.statusKeep(next, old)
	}
	if r.kind.ValidateStatus != nil {
		if errs := r.kind.ValidateStatus(next, old); len(errs) > 0 {
			return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
		}
	}
	if a.applied {
		next.SetManagedFields(in.GetManagedFields())
	}
	r.recordUpdateLocked(old, next, a, "status")
	if r.kind.toStorage != nil {
		var err error
		if next, err = r.kind.toStorage(next); err != nil {
			return zero, err
		}
	}
	if semanticallyEqual(stored, next) {
		return deepCopy(stored), nil
	}
	if r.finalizedLocked(next) {
		// A status write may drop the last finalizer where StatusMeta
		// keeps metadata (CustomResourceDefinitions' status does).
		return deepCopy(r.removeLocked(next)), nil
	}
	return deepCopy(r.commitLocked(watch.Modified, next)), nil
}

// finalizedLocked reports whether obj is being deleted, has no finalizer
// left and no grace period still running: the moment it leaves storage.
func (r *Resource[T]) finalizedLocked(obj T) bool {
	if obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) > 0 {
		return false
	}
	if ns, ok := any(obj).(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false // a namespace also waits for spec.finalizers
	}
	g := obj.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// commitLocked allocates a resourceVersion, stores obj (which the store
// now owns) and records the event for watchers.
func (r *Resource[T]) commitLocked(typ watch.EventType, obj T) T {
	if st := r.c.staging; st != nil {
		r.c.staging = nil // the write's own commit only
		stage(st, r, typ, obj)
		return obj
	}
	rv := r.c.nextRVLocked()
	obj.SetResourceVersion(formatRV(rv))
	key := objectKey(obj)
	prev, had := r.objs[key]
	if typ == watch.Deleted {
		delete(r.objs, key)
		delete(r.decoded, key)
		delete(r.c.uids, obj.GetUID())
	} else {
		r.objs[key] = obj
		r.c.uids[obj.GetUID()] = r.kind.groupKind()
	}
	r.recordLocked(typ, obj, prev, rv)
	if r.kind.GVK.Group == "" && r.kind.GVK.Kind == "Pod" {
		r.c.podWrittenLocked(key)
	}
	if r.kind.GVK.Group == "" && r.kind.GVK.Kind == "Node" {
		for _, k := range r.c.kubelets {
			k.nodeWrittenLocked()
		}
	}
	var prevObj Object
	if had {
		prevObj = prev
	}
	r.c.observeLocked(r, typ, obj, prevObj)
	if hook := r.kind.Stored; hook != nil {
		r.c.runHookLocked(func(tx *Tx) { hook(tx, typ, obj) })
	}
	return obj
}

// removeLocked deletes obj (private to the caller) from storage; the
// garbage collector then looks at its dependents.
func (r *Resource[T]) removeLocked(obj T) T {
	return r.commitLocked(watch.Deleted, obj)
}

func objectKey(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
