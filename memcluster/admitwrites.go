package memcluster

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// The writes of a cluster with admission (Config.Admission): each verb's
// steps for admitWrite.

// createAdmitted is [Client.Create] through admission; guard, if set,
// refuses the create (with the lock held) before it is admitted and again
// before it is prepared.
func (cl Client[T]) createAdmitted(ctx context.Context, obj T, opts metav1.CreateOptions, guard func() error) (T, error) {
	var zero T
	r := cl.r
	a := managerOf(opts.FieldManager)
	sent, err := r.roundTrip(obj)
	if err != nil {
		return zero, err
	}
	if !r.kind.ClusterScoped && sent.GetNamespace() == "" {
		sent.SetNamespace(cl.admissionNamespace(sent))
	}
	req := cl.request(ctx, admit.Create, "", sent.GetName(), sent, typedOptions(opts.DeepCopy(), "CreateOptions"), a.manager)
	check := func() error {
		if guard != nil {
			if err := guard(); err != nil {
				return err
			}
		}
		if r.kind.ClusterScoped {
			return nil
		}
		// NamespaceLifecycle, which kube-apiserver runs before the webhooks.
		return r.c.admitNamespaceLocked(r.kind.groupResource(), sent)
	}
	return admitWrite(ctx, r, writeSteps[T]{req: req, create: true,
		start: func(*admit.Request) (T, bool, T, error) {
			if err := check(); err != nil {
				return zero, false, zero, err
			}
			return zero, false, deepCopy(sent), nil
		},
		write: func(in T) (T, error) {
			if err := check(); err != nil {
				return zero, err
			}
			return r.createLocked(in, cl.ns, a)
		},
	})
}

// replaceAdmitted is an update of in (round-tripped, with its namespace)
// or of its subresource sub ("status", "scale") through admission.
func (cl Client[T]) replaceAdmitted(ctx context.Context, in T, sub string, opts metav1.UpdateOptions, manager string, write func(T) (T, error)) (T, error) {
	var zero T
	r := cl.r
	key := objectKey(in)
	req := cl.request(ctx, admit.Update, sub, in.GetName(), in, typedOptions(opts.DeepCopy(), "UpdateOptions"), manager)
	steps := writeSteps[T]{req: req, write: write,
		start: func(*admit.Request) (T, bool, T, error) {
			stored, ok := r.objs[key]
			if !ok {
				return zero, false, zero, apierrors.NewNotFound(r.kind.groupResource(), key.Name)
			}
			return stored, true, deepCopy(in), nil
		},
	}
	if sub == "scale" {
		r.scaleSteps(&steps)
	}
	return admitWrite(ctx, r, steps)
}

// patchAdmitted is a patch (not an apply) through admission: an update of
// the patched object, or of its status.
func (cl Client[T]) patchAdmitted(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub, version string, view func(T) (T, error)) (T, error) {
	var zero T
	r := cl.r
	key := cl.key(cl.ns, name)
	a := managerOf(opts.FieldManager)
	cl.version = version
	req := cl.request(ctx, admit.Update, sub, name, nil, updateOptionsOf(opts), a.manager)
	return admitWrite(ctx, r, writeSteps[T]{req: req,
		start: func(*admit.Request) (T, bool, T, error) {
			stored, ok := r.objs[key]
			if !ok {
				return zero, false, zero, apierrors.NewNotFound(r.kind.groupResource(), name)
			}
			in, err := r.patched(stored, key, pt, data, view)
			return stored, true, in, err
		},
		write: func(in T) (T, error) {
			if sub == "status" {
				return r.updateStatusLocked(in, a)
			}
			return r.updateLocked(in, a)
		},
	})
}

// applyAdmitted is a server-side apply through admission: a create if
// there is no object, else an update of it or of its subresource sub. It
// reports whether it created the object.
func (cl Client[T]) applyAdmitted(ctx context.Context, name string, data []byte, opts metav1.PatchOptions, sub, version string, view func(T) (T, error)) (T, bool, error) {
	var zero T
	r := cl.r
	cl.version = version
	var exists bool
	var a author
	steps := writeSteps[T]{req: cl.request(ctx, admit.Update, sub, name, nil, nil, opts.FieldManager),
		start: func(req *admit.Request) (T, bool, T, error) {
			stored, found, in, by, err := r.appliedLocked(cl.ns, name, data, opts, sub, version, view)
			if err != nil {
				return zero, false, zero, err
			}
			exists, a = found, by
			req.Namespace = in.GetNamespace()
			if exists {
				req.Operation, req.Options = admit.Update, updateOptionsOf(opts)
			} else {
				req.Operation = admit.Create
				req.Options = typedOptions(&metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}, "CreateOptions")
			}
			return stored, found, in, nil
		},
		write: func(in T) (T, error) { return r.writeAppliedLocked(in, exists, sub, a) },
	}
	if sub == "scale" {
		r.scaleSteps(&steps)
	}
	out, err := admitWrite(ctx, r, steps)
	return out, err == nil && !exists, err
}

// updateOptionsOf is the options of the update a patch makes, as
// admission is told them.
func updateOptionsOf(opts metav1.PatchOptions) runtime.Object {
	return typedOptions(&metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}, "UpdateOptions")
}

// deleteAdmitted is a delete through admission: both stages see the
// object as stored, then the deletion takes effect if it is still stored
// as they saw it.
func (cl Client[T]) deleteAdmitted(ctx context.Context, key types.NamespacedName, opts metav1.DeleteOptions) (T, bool, error) {
	r := cl.r
	c := r.c
	for {
		stored, found, err := cl.admitDelete(ctx, key, typedOptions(opts.DeepCopy(), "DeleteOptions"))
		if err != nil {
			var zero T
			return zero, false, err
		}
		c.mu.Lock()
		if found && !r.unchangedLocked(key, stored, true) {
			c.mu.Unlock()
			continue
		}
		c.holdLocked()
		out, gone, err := r.deleteLocked(key, opts)
		c.releaseLocked()
		c.mu.Unlock()
		return out, gone, err
	}
}

// scaleSteps makes the steps of a write of r's scale subresource show
// admission the Scale (autoscaling/v1) of the objects, and write the
// replicas of the Scale the mutating stage leaves back into the object.
func (r *Resource[T]) scaleSteps(s *writeSteps[T]) {
	s.req.Kind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	s.view = func(obj T) (runtime.Object, error) {
		sc, err := scaleFor(obj, restInfo{scale: r.customScale(obj)}, false)
		if err != nil {
			return nil, err
		}
		sc.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		return sc, nil
	}
	s.unview = func(admitted runtime.Object, in T) (T, error) {
		sc, ok := admitted.(*autoscalingv1.Scale)
		if !ok {
			var zero T
			return zero, apierrors.NewInternalError(errTypeChanged(admitted, &autoscalingv1.Scale{}))
		}
		return in, setScaleReplicas(in, sc.Spec.Replicas, r.customScale(in))
	}
}

// customScale returns the scale subresource of a custom resource's
// version, or nil.
func (r *Resource[T]) customScale(obj T) *CustomScale {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	ck := r.c.customs[r.kind.groupResource()]
	if ck == nil {
		return nil
	}
	u, ok := any(obj).(interface{ GetAPIVersion() string })
	if !ok {
		return nil
	}
	spec := ck.spec.Load()
	for i := range spec.Versions {
		if v := &spec.Versions[i]; spec.gvk(v.Name).GroupVersion().String() == u.GetAPIVersion() {
			return v.Scale
		}
	}
	return nil
}

// evictionAdmitted runs the admission of an eviction of the pod ns/name
// (a create of the pods/eviction subresource) and returns the Eviction
// as the mutating stage left it.
func (c *Cluster) evictionAdmitted(ctx context.Context, ns, name string, ev *policyv1.Eviction) (*policyv1.Eviction, error) {
	obj := ev.DeepCopy()
	obj.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("Eviction"))
	req := admit.Request{
		Operation: admit.Create, Kind: obj.GroupVersionKind(), Resource: c.pods.kind.GVK.GroupVersion().WithResource("pods"),
		Subresource: "eviction", Namespace: ns, Name: name, Object: obj,
		Options: typedOptions(&metav1.CreateOptions{}, "CreateOptions"), User: userOf(ctx, programName()),
	}
	if err := c.cfg.Admission.Mutate(ctx, &req); err != nil {
		return nil, err
	}
	out, ok := req.Object.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewInternalError(errTypeChanged(req.Object, ev))
	}
	req.Object = out.DeepCopy()
	if err := c.cfg.Admission.Validate(ctx, &req); err != nil {
		return nil, err
	}
	return out, nil
}
