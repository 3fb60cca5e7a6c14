package memcluster

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/yaml"
)

// applyLocked serves a server-side apply of data (YAML or JSON) to the
// object called name, in namespace ns ("" for a namespaced kind: the
// patch's own, or "default"), or to its subresource sub ("status", or
// "scale" with a patch of the parent's kind that [api.patchScale] made
// from the Scale). It follows
// kube-apiserver's apply handler: the field manager merges the patch
// into the live object (an empty one if there is none, and the apply
// creates it) and records the fields as opts.FieldManager's; the result
// is then checked against the request (uid, namespace, name) and
// written as a create, an update or a status update whose managedFields
// are the apply's. It reports whether the object was created. view, if
// set, returns the stored object as the apply sees it (a custom kind's,
// in the version of the request, version: "" for the kind's own).
func (r *Resource[T]) applyLocked(ns, name string, data []byte, opts metav1.PatchOptions, sub, version string, view func(T) (T, error)) (T, bool, error) {
	var zero T
	_, exists, in, a, err := r.appliedLocked(ns, name, data, opts, sub, version, view)
	if err != nil {
		return zero, false, err
	}
	out, err := r.writeAppliedLocked(in, exists, sub, a)
	return out, err == nil && !exists, err
}

// writeAppliedLocked writes in, the object an apply made, by a: a create
// if there was no object, else an update of it or of its subresource
// sub.
func (r *Resource[T]) writeAppliedLocked(in T, exists bool, sub string, a author) (T, error) {
	if !exists {
		return r.createLocked(in, in.GetNamespace(), a)
	}
	if sub == "status" {
		return r.updateStatusLocked(in, a)
	}
	return r.updateLocked(in, a)
}

// appliedLocked runs the field manager's apply for applyLocked: it
// returns the stored object (exists false: none), the object the apply
// makes of it (private, round-tripped) and its author.
func (r *Resource[T]) appliedLocked(ns, name string, data []byte, opts metav1.PatchOptions, sub, version string, view func(T) (T, error)) (stored T, exists bool, _ T, _ author, _ error) {
	var zero T
	var none author
	t := r.versionTrackerLocked(version)
	if t.main == nil {
		return zero, false, zero, none, noApply(t)
	}
	if _, err := yaml.YAMLToJSON(data); err != nil {
		return zero, false, zero, none, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
	}
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(data, &patch.Object); err != nil {
		return zero, false, zero, none, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if r.kind.ClusterScoped {
		ns = ""
	} else if ns == "" {
		ns = patch.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	stored, exists = r.objs[key]
	fm := map[string]*managedfields.FieldManager{"": t.main, "status": t.status, "scale": t.scale}[sub]
	if sub != "" && !exists {
		return zero, false, zero, none, apierrors.NewNotFound(r.kind.groupResource(), name)
	}
	if fm == nil {
		return zero, false, zero, none, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("memcluster does not serve server-side apply to the %s subresource of %s", sub, r.kind.groupResource()),
		}}
	}
	live := r.kind.New()
	if exists {
		live = stored
		if view != nil {
			var err error
			if live, err = view(stored); err != nil {
				return zero, false, zero, none, err
			}
		}
	}
	force := opts.Force != nil && *opts.Force
	if sub == "scale" {
		live = r.beforeFirstScaleApplyLocked(live)
	}
	obj, err := fm.Apply(withKind(live, t.gvk), patch, opts.FieldManager, force)
	if err != nil {
		if sub == "scale" {
			err = asScaleConflict(err, r.kind.GVK.GroupVersion().String())
		}
		return zero, false, zero, none, applyError(err)
	}
	in, ok := obj.(T)
	if !ok {
		return zero, false, zero, none, applyError(fmt.Errorf("memcluster: the field manager returned a %T, not a %s", obj, r.kind.GVK.Kind))
	}
	clearTypeMeta(in)
	in.SetManagedFields(r.c.stampTimes(in.GetManagedFields(), live.GetManagedFields()))
	if sub == "scale" {
		in.SetManagedFields(scaleEntries(in.GetManagedFields()))
		removedReplicasAreZero(in)
	}
	if uid := in.GetUID(); !exists && uid != "" {
		return zero, false, zero, none, apierrors.NewConflict(r.kind.groupResource(), name,
			fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
	}
	switch got := in.GetNamespace(); {
	case got == ns:
	case got == "":
		in.SetNamespace(ns)
	case ns == "":
		in.SetNamespace("")
	default:
		return zero, false, zero, none, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if got := in.GetName(); got != name {
		return zero, false, zero, none, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", got, name))
	}
	if opts.FieldValidation == metav1.FieldValidationStrict {
		if err := yaml.UnmarshalStrict(data, &map[string]any{}); err != nil {
			return zero, false, zero, none, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
		}
	}
	a := author{manager: opts.FieldManager, applied: true, scale: sub == "scale"}
	if exists {
		if in, err = r.roundTrip(in); err != nil {
			return zero, false, zero, none, err
		}
	}
	return stored, exists, in, a, nil
}

// beforeFirstScaleApplyLocked returns live as an apply of its scale
// subresource starts from. kube-apiserver gives the Scale only the
// parent's entries that own spec.replicas; with none, its field manager
// treats the Scale as never applied and first records its fields (a
// replicas other than 0) as "before-first-apply"'s, with which the apply
// then conflicts unless forced.
func (r *Resource[T]) beforeFirstScaleApplyLocked(live T) T {
	t := r.trackerLocked()
	if r.scaleTracked(live) || scaleOf(live).Spec.Replicas == 0 {
		return live
	}
	before := withoutReplicas(live).(T)
	out := shallowCopy(live)
	out.SetManagedFields(scaleEntries(r.recordUpdate(t, t.scale, t.mainReset, false, before, live, "before-first-apply")))
	return out
}

// asScaleConflict words a conflict of an apply of the scale subresource
// as kube-apiserver does: the managers it names have the version of the
// Scale (autoscaling/v1), not parentVersion.
func asScaleConflict(err error, parentVersion string) error {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Reason != metav1.StatusReasonConflict {
		return err
	}
	s := st.Status()
	fix := func(m string) string { return strings.ReplaceAll(m, " using "+parentVersion, " using autoscaling/v1") }
	s.Message = fix(s.Message)
	if s.Details != nil {
		s.Details = s.Details.DeepCopy()
		for i := range s.Details.Causes {
			s.Details.Causes[i].Message = fix(s.Details.Causes[i].Message)
		}
	}
	return &apierrors.StatusError{ErrStatus: s}
}

// applicable returns the 415 that answers an apply to a kind the
// cluster does not track, or nil.
func (r *Resource[T]) applicable() error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if t := r.trackerLocked(); t.main == nil {
		return noApply(t)
	}
	return nil
}

// noApply is the answer to an apply to a kind that t does not track: a
// 415, as for a patch type the kind does not accept, saying why.
func noApply(t *tracker) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: t.missing,
	}}
}

// applyError is the answer to a failed apply: the field manager's own
// API errors (a 409 with the conflicts, a 400 for a patch of another
// kind or version, …) as they are, and any other failure (a patch that
// does not fit the kind's type, say) as kube-apiserver answers an error
// that is not an API status: a 500 with the error as the message.
func applyError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}
