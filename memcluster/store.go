package memcluster

import (
	"fmt"
	"slices"

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

// createLocked stores a new object and returns a copy of what was stored.
func (r *Resource[T]) createLocked(obj T, ns string) (T, error) {
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
	if in.GetName() == "" && in.GetGenerateName() != "" {
		if err := r.generateNameLocked(in); err != nil {
			return zero, err
		}
	}
	if r.kind.PrepareCreate != nil {
		r.kind.PrepareCreate(in)
	}
	in.SetUID(r.c.newUIDLocked())
	in.SetCreationTimestamp(r.c.now())
	in.SetGeneration(1)
	in.SetDeletionTimestamp(nil)
	in.SetDeletionGracePeriodSeconds(nil)
	in.SetManagedFields(nil)
	if r.kind.Default != nil {
		r.kind.Default(in)
	}
	var errs field.ErrorList
	if !r.kind.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessor(in, !r.kind.ClusterScoped, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	}
	if r.kind.Validate != nil {
		var none T
		errs = append(errs, r.kind.Validate(in, none)...)
	}
	if len(errs) > 0 {
		return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
	}
	if _, exists := r.objs[objectKey(in)]; exists {
		return zero, apierrors.NewAlreadyExists(r.kind.groupResource(), in.GetName())
	}
	if r.kind.toStorage != nil {
		if in, err = r.kind.toStorage(in); err != nil {
			return zero, err
		}
	}
	stored := r.commitLocked(watch.Added, in)
	r.collectIfOrphanedLocked(stored)
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

// updateLocked writes metadata and spec; in must be a private,
// round-tripped copy.
func (r *Resource[T]) updateLocked(in T) (T, error) {
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
	in.SetManagedFields(nil)
	if r.kind.CopyStatus != nil {
		r.kind.CopyStatus(in, old)
	}
	var errs field.ErrorList
	if !r.kind.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessorUpdate(in, old, field.NewPath("metadata"))
		errs = append(errs, apivalidation.ValidateObjectMetaAccessor(in, !r.kind.ClusterScoped, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	}
	if r.kind.Validate != nil {
		errs = append(errs, r.kind.Validate(in, old)...)
	}
	if old.GetDeletionTimestamp() != nil {
		for _, f := range in.GetFinalizers() {
			if !slices.Contains(old.GetFinalizers(), f) {
				errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"),
					fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", f)))
			}
		}
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
	r.collectIfOrphanedLocked(out)
	return deepCopy(out), nil
}

// updateStatusLocked writes the status of in and nothing else.
func (r *Resource[T]) updateStatusLocked(in T) (T, error) {
	var zero T
	if r.kind.CopyStatus == nil {
		return zero, apierrors.NewMethodNotSupported(r.kind.groupResource(), "update/status")
	}
	stored, err := r.checkPreconditionsLocked(in)
	if err != nil {
		return zero, err
	}
	var next T
	var same bool
	if r.kind.statusUpdate != nil {
		next = r.kind.statusUpdate(stored, in)
		same = r.kind.statusEqual(stored, next)
	} else {
		if r.kind.Default != nil {
			r.kind.Default(in) // as kube-apiserver decodes the request
		}
		old := stored
		if r.kind.asVersionOf != nil {
			old = r.kind.asVersionOf(stored, in)
		}
		next = deepCopy(old)
		r.kind.CopyStatus(next, in)
		if r.kind.StatusMeta != nil {
			r.kind.StatusMeta(next, in)
		}
		if r.kind.ValidateStatus != nil {
			if errs := r.kind.ValidateStatus(next, old); len(errs) > 0 {
				return zero, apierrors.NewInvalid(r.kind.groupKind(), in.GetName(), errs)
			}
		}
		if r.kind.toStorage != nil {
			if next, err = r.kind.toStorage(next); err != nil {
				return zero, err
			}
		}
		same = semanticallyEqual(stored, next)
	}
	if same {
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
	g := obj.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// commitLocked allocates a resourceVersion, stores obj (which the store
// now owns) and records the event for watchers.
func (r *Resource[T]) commitLocked(typ watch.EventType, obj T) T {
	rv := r.c.nextRVLocked()
	obj.SetResourceVersion(formatRV(rv))
	key := objectKey(obj)
	prev := r.objs[key]
	if typ == watch.Deleted {
		delete(r.objs, key)
		delete(r.c.uids, obj.GetUID())
	} else {
		r.objs[key] = obj
		r.c.uids[obj.GetUID()] = r.kind.groupKind()
	}
	r.recordLocked(typ, obj, prev, rv)
	if r.kind.GVK.Group == "" && r.kind.GVK.Kind == "Pod" {
		r.c.podWrittenLocked(key)
	}
	if hook := r.kind.Stored; hook != nil {
		r.c.runHookLocked(func(tx *Tx) { hook(tx, typ, obj) })
	}
	return obj
}

// removeLocked deletes obj from storage and collects its dependents.
func (r *Resource[T]) removeLocked(obj T) T {
	stored := r.commitLocked(watch.Deleted, obj)
	r.c.collectDependentsLocked(stored.GetUID())
	return stored
}

func objectKey(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
