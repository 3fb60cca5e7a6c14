package memcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// Admission (Config.Admission) runs around a write as kube-apiserver runs
// it, and never with the cluster's lock held: a webhook may read the
// cluster, or be slow. A write is prepared under the lock as before, but
// its commit is staged (see commitLocked): the lock is released for the
// validating stage, then taken again, and the staged object is stored
// only if the object it replaces is still the one stored. Otherwise the
// write starts over, admission included, as kube-apiserver's
// GuaranteedUpdate retries with the current object (an update that named
// a resourceVersion then fails with its Conflict).

// staged is a write prepared under the lock whose commit waits for the
// validating stage.
type staged struct {
	obj    Object // what the write would store; nil: the write stores nothing
	key    types.NamespacedName
	prev   Object // what was stored at key when it was prepared; nil: nothing
	added  bool   // a create
	commit func() Object
}

// stage captures the commit of obj by r into st instead of making it.
func stage[T Object](st *staged, r *Resource[T], typ watch.EventType, obj T) {
	st.obj, st.key, st.added = obj, objectKey(obj), typ == watch.Added
	if prev, ok := r.objs[st.key]; ok {
		st.prev = prev
	}
	st.commit = func() Object { return r.commitLocked(typ, obj) }
}

// admitting reports whether the cluster's admission has anything to do.
func (c *Cluster) admitting() bool { return c.cfg.Admission != nil && c.cfg.Admission.Active() }

// userOf is who made a request: what the context names (the REST API's
// impersonation headers, or the bench's name of its client), else the
// field manager of the write.
func userOf(ctx context.Context, manager string) admit.User {
	if u, ok := admit.UserFrom(ctx); ok {
		return u
	}
	return admit.User{Name: manager, Groups: []string{"system:authenticated"}}
}

// writeSteps are the parts of a write that admission runs around.
type writeSteps[T Object] struct {
	// req is the admission request, without its objects.
	req admit.Request
	// start runs with the lock held. It returns the stored object the
	// write starts from (found false: none) and the new object as the
	// request decoded it (private to the write; not yet defaulted). A
	// create's stored object does not matter (see create).
	// It may complete req (an apply learns whether it creates).
	start func(req *admit.Request) (stored T, found bool, in T, err error)
	// write runs with the lock held: the write's *Locked function, which
	// stores (commitLocked) at most once; that commit is staged.
	write func(in T) (T, error)
	// create is a plain create: the object it starts from is none, and
	// a name taken by the time it commits is AlreadyExists (or, for a
	// generated name, a new try).
	create bool
	// view, if set, is what admission sees of an object of the write
	// (the Scale of a scale subresource write), and unview writes what
	// the mutating stage made of it back into in.
	view   func(T) (runtime.Object, error)
	unview func(admitted runtime.Object, in T) (T, error)
}

// admitWrite runs a write through admission: the mutating stage on the
// object as decoded and defaulted, the write's preparation under the lock
// (strategy, validation), the validating stage on the object it would
// store, then the store, if nothing changed the object meanwhile; else it
// starts over.
func admitWrite[T Object](ctx context.Context, r *Resource[T], s writeSteps[T]) (T, error) {
	var zero T
	c := r.c
	adm := c.cfg.Admission
	for {
		req := s.req
		c.mu.Lock()
		stored, found, in, err := s.start(&req)
		c.mu.Unlock()
		if err != nil {
			return zero, err
		}
		if r.kind.Default != nil {
			r.kind.Default(in) // as kube-apiserver's decoder defaults
		}
		req.Default = r.defaulter()
		if req.Object, err = s.admitted(r, in); err != nil {
			return zero, err
		}
		if found && !s.create {
			if req.OldObject, err = s.admitted(r, r.inVersion(stored, req.Resource.Version)); err != nil {
				return zero, err
			}
		}
		if err := adm.Mutate(ctx, &req); err != nil {
			return zero, err
		}
		if in, err = s.back(r, req.Object, in); err != nil {
			return zero, err
		}
		st := &staged{}
		c.mu.Lock()
		if !s.create && !r.unchangedLocked(objectKey(in), stored, found) {
			c.mu.Unlock()
			continue
		}
		c.staging = st
		out, err := s.write(in)
		c.staging = nil
		c.mu.Unlock()
		if err != nil {
			return zero, err
		}
		next := out
		if st.obj != nil {
			next = deepCopy(st.obj.(T))
		}
		req.Name = next.GetName()
		if req.Object, err = s.admitted(r, next); err != nil {
			return zero, err
		}
		if err := adm.Validate(ctx, &req); err != nil {
			return zero, err
		}
		if st.obj == nil {
			return out, nil // nothing to store
		}
		c.mu.Lock()
		cur, exists := r.objs[st.key]
		switch {
		case st.added && exists && s.create && s.req.Name == "" && in.GetGenerateName() != "":
			c.mu.Unlock()
			continue // the generated name was taken meanwhile: another
		case st.added && exists && s.create:
			c.mu.Unlock()
			return zero, apierrors.NewAlreadyExists(r.kind.groupResource(), st.key.Name)
		case st.added && exists, !st.added && (!exists || Object(cur) != st.prev):
			c.mu.Unlock()
			continue // changed meanwhile: start over with what is stored now
		}
		res := deepCopy(st.commit().(T))
		c.mu.Unlock()
		return res, nil
	}
}

// admitted is obj as admission sees it: its view, or a copy that names
// its apiVersion and kind.
func (s writeSteps[T]) admitted(r *Resource[T], obj T) (runtime.Object, error) {
	if s.view != nil {
		return s.view(obj)
	}
	out := deepCopy(obj)
	r.setKind(out, s.req.Kind)
	return out, nil
}

// back is in as the mutating stage left it (admitted).
func (s writeSteps[T]) back(r *Resource[T], admitted runtime.Object, in T) (T, error) {
	if s.unview != nil {
		return s.unview(admitted, in)
	}
	out, ok := admitted.(T)
	if !ok {
		var zero T
		return zero, apierrors.NewInternalError(errTypeChanged(admitted, in))
	}
	clearTypeMeta(out)
	return out, nil
}

// unchangedLocked reports whether the object stored at key is still
// stored (found) or still absent.
func (r *Resource[T]) unchangedLocked(key types.NamespacedName, stored T, found bool) bool {
	cur, ok := r.objs[key]
	return ok == found && (!ok || any(cur) == any(stored))
}

// setKind sets obj's apiVersion and kind to gvk, as admission sees an
// object (a custom resource names its own).
func (r *Resource[T]) setKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
}

// defaulter returns the kind's API defaults for admission (which
// defaults the objects a mutating webhook patched), or nil.
func (r *Resource[T]) defaulter() func(runtime.Object) {
	def := r.kind.Default
	if def == nil {
		return nil
	}
	return func(obj runtime.Object) {
		if t, ok := obj.(T); ok {
			def(t)
		}
	}
}

// request is the admission request of a write of cl's kind, or of its
// subresource sub, in the version of obj (a custom resource's request
// version), by the user of ctx (else manager).
func (cl Client[T]) request(ctx context.Context, op admit.Operation, sub, name string, obj runtime.Object, opts runtime.Object, manager string) admit.Request {
	k := cl.r.kind
	gvk := k.GVK
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetAPIVersion() != "" {
		gvk = u.GroupVersionKind()
	} else if cl.version != "" {
		gvk.Version = cl.version
	}
	return admit.Request{
		Operation: op, Kind: gvk, Resource: gvk.GroupVersion().WithResource(k.Resource), Subresource: sub,
		Namespace: cl.admissionNamespace(obj), Name: name, Options: opts, User: userOf(ctx, manager),
	}
}

// admissionNamespace is the namespace a request names: none for a
// cluster-scoped kind, else the client's, else the object's, else
// "default" (where a create without one goes).
func (cl Client[T]) admissionNamespace(obj runtime.Object) string {
	if cl.r.kind.ClusterScoped {
		return ""
	}
	if cl.ns != "" {
		return cl.ns
	}
	if m, ok := obj.(Object); ok && m.GetNamespace() != "" {
		return m.GetNamespace()
	}
	return "default"
}

// inVersion returns the stored object obj as read in version ("": as
// stored), for admission of a request in that version.
func (r *Resource[T]) inVersion(obj T, version string) T {
	if r.kind.asVersionOf == nil || version == "" || version == r.kind.GVK.Version {
		return obj
	}
	stub := r.kind.New()
	if u, ok := any(stub).(*unstructured.Unstructured); ok {
		gvk := r.kind.GVK
		gvk.Version = version
		u.SetGroupVersionKind(gvk)
	}
	return r.kind.asVersionOf(obj, stub)
}

// admitDelete runs the admission of a delete of the object at key: both
// stages, with the stored object as the old one and no new one, before
// the deletion takes effect. It returns the object admitted, which the
// deletion must find still stored (else it is admitted again), or found
// false if there is none (the deletion answers NotFound).
func (cl Client[T]) admitDelete(ctx context.Context, key types.NamespacedName, opts runtime.Object) (stored T, found bool, err error) {
	r := cl.r
	c := r.c
	c.mu.Lock()
	stored, found = r.objs[key]
	c.mu.Unlock()
	if !found {
		return stored, false, nil
	}
	req := cl.request(ctx, admit.Delete, "", key.Name, nil, opts, programName())
	req.Namespace = key.Namespace
	old := deepCopy(r.inVersion(stored, cl.version))
	r.setKind(old, req.Kind)
	req.OldObject = old
	if err := c.cfg.Admission.Mutate(ctx, &req); err != nil {
		return stored, true, err
	}
	req.OldObject = old
	return stored, true, c.cfg.Admission.Validate(ctx, &req)
}

// errTypeChanged is the error of a mutating stage that gave back an
// object of another type than the write's.
func errTypeChanged(got runtime.Object, want Object) error {
	return fmt.Errorf("memcluster: admission returned a %T for a %T", got, want)
}

// typedOptions returns opts with its apiVersion and kind set, as
// admission sends a request's options (kind is "CreateOptions",
// "UpdateOptions", "PatchOptions" or "DeleteOptions").
func typedOptions(opts runtime.Object, kind string) runtime.Object {
	opts.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind))
	return opts
}
