package memcluster

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// The scale subresource (autoscaling/v1 Scale) of Deployments,
// ReplicaSets, StatefulSets and ReplicationControllers: what kubectl scale and the HorizontalPodAutoscaler use. A
// write of the Scale is an update of spec.replicas (admitted as an update
// of the parent resource), conditional on the Scale's resourceVersion
// when it has one.

func hasScale(in restInfo) bool {
	return in.scale != nil || scaleKind(in.gvk)
}

// scaleKind reports whether gvk is a built-in kind with a scale
// subresource.
func scaleKind(gvk schema.GroupVersionKind) bool {
	switch gvk {
	case appsv1.SchemeGroupVersion.WithKind("Deployment"), appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"), corev1.SchemeGroupVersion.WithKind("ReplicationController"):
		return true
	}
	return false
}

// maxScaleRetries bounds the retries of an unconditional scale write that
// races with other writes.
const maxScaleRetries = 5

func (a *api) serveScale(w http.ResponseWriter, r *http.Request, rq request, s *served) {
	in := restInfo{gvk: autoscalingv1.SchemeGroupVersion.WithKind("Scale")}
	rep, err := a.negotiate(r.Header.Get("Accept"), false, true)
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	if rq.namespace == "" && !s.in.clusterScoped {
		writeError(w, a, rep, notFoundPath(r.URL.Path))
		return
	}
	var out runtime.Object
	switch r.Method {
	case http.MethodGet:
		out, err = s.get(r.Context(), rq.namespace, rq.name)
	case http.MethodPut:
		out, err = a.putScale(r, rq, s, in)
	case http.MethodPatch:
		out, err = a.patchScale(r, rq, s)
	default:
		err = methodNotAllowed(r.Method, r.URL.Path)
	}
	var sc *autoscalingv1.Scale
	if err == nil {
		sc, err = scaleFor(out, s.in, r.Method == http.MethodGet)
	}
	if err != nil {
		writeError(w, a, rep, err)
		return
	}
	a.writeObject(w, rep, in, http.StatusOK, sc)
}

func (a *api) putScale(r *http.Request, rq request, s *served, in restInfo) (runtime.Object, error) {
	if err := unsupportedOptions(r.URL.Query()); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	obj, err := a.decode(r.Header.Get("Content-Type"), body, in.gvk, &autoscalingv1.Scale{})
	if err != nil {
		return nil, err
	}
	if err := checkNames(obj, rq); err != nil {
		return nil, err
	}
	return writeScale(r, rq, s, obj.(*autoscalingv1.Scale))
}

func (a *api) patchScale(r *http.Request, rq request, s *served) (runtime.Object, error) {
	pt, data, err := readPatch(r)
	if err != nil {
		return nil, err
	}
	cur, ok := s.peek(rq.namespace, rq.name)
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: s.in.gvk.Group, Resource: s.in.resource}, rq.name)
	}
	cs, err := scaleFor(cur, s.in, false)
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(cs)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
	case types.ApplyYAMLPatchType:
		return a.applyScale(r, rq, s, data)
	case types.JSONPatchType:
		patched, err = jsonPatch(orig, data)
	case types.MergePatchType:
		patched, err = mergePatch(orig, data)
	default:
		patched, err = strategicMergePatch(orig, data, reflect.TypeOf(&autoscalingv1.Scale{}))
	}
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	sc := &autoscalingv1.Scale{}
	if err := json.Unmarshal(patched, sc); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the patched scale: %v", err))
	}
	return writeScale(r, rq, s, sc)
}

// applyScale serves an apply of a Scale: an apply of the parent's
// spec.replicas (of none if the Scale has none), recorded as the scale
// subresource's, as kube-apiserver maps the Scale's managedFields to its
// parent's.
func (a *api) applyScale(r *http.Request, rq request, s *served, data []byte) (runtime.Object, error) {
	var opts metav1.PatchOptions
	if err := a.writeOptions(r, &opts); err != nil {
		return nil, err
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, types.ApplyYAMLPatchType); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	if _, err := yaml.YAMLToJSON(data); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
	}
	sc := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(data, &sc.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if gvk := sc.GroupVersionKind(); gvk != autoscalingv1.SchemeGroupVersion.WithKind("Scale") {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvk))
	}
	if sc.GetManagedFields() != nil {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	meta := map[string]any{}
	for _, f := range []string{"name", "namespace", "uid", "resourceVersion"} {
		if v, ok := sc.Object["metadata"].(map[string]any)[f]; ok {
			meta[f] = v
		}
	}
	parent := map[string]any{"apiVersion": s.in.gvk.GroupVersion().String(), "kind": s.in.gvk.Kind, "metadata": meta}
	if replicas, ok, _ := unstructured.NestedFieldNoCopy(sc.Object, "spec", "replicas"); ok {
		parent["spec"] = map[string]any{"replicas": replicas}
	}
	body, err := json.Marshal(parent)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	out, _, err := s.patch(r.Context(), rq.namespace, rq.name, types.ApplyYAMLPatchType, body, "scale", opts)
	return out, err
}

// writeScale sets spec.replicas of the parent to the scale's, as an
// update of the parent's scale subresource by the request's field
// manager.
func writeScale(r *http.Request, rq request, s *served, sc *autoscalingv1.Scale) (runtime.Object, error) {
	opts := metav1.UpdateOptions{FieldManager: requestManager(r.URL.Query().Get("fieldManager"), r)}
	for try := 0; ; try++ {
		cur, ok := s.peek(rq.namespace, rq.name)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: s.in.gvk.Group, Resource: s.in.resource}, rq.name)
		}
		if err := setScaleReplicas(cur, sc.Spec.Replicas, s.in.scale); err != nil {
			return nil, err
		}
		if sc.ResourceVersion != "" {
			cur.(Object).SetResourceVersion(sc.ResourceVersion)
		}
		out, err := s.update(r.Context(), rq.namespace, cur, "scale", opts)
		if apierrors.IsConflict(err) && sc.ResourceVersion == "" && try < maxScaleRetries {
			continue
		}
		return out, err
	}
}

// setScaleReplicas sets the spec replicas of obj (a Deployment,
// ReplicaSet, StatefulSet, ReplicationController, or a custom resource
// whose scale subresource paths says where) to replicas.
func setScaleReplicas(obj runtime.Object, replicas int32, paths *CustomScale) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = ptrTo(replicas)
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = ptrTo(replicas)
	case *appsv1.StatefulSet:
		o.Spec.Replicas = ptrTo(replicas)
	case *corev1.ReplicationController:
		o.Spec.Replicas = ptrTo(replicas)
	case *unstructured.Unstructured:
		if paths == nil {
			return apierrors.NewInternalError(fmt.Errorf("memcluster: %s has no scale subresource", o.GetKind()))
		}
		path := paths.SpecReplicasPath
		if replicas == unsetReplicas {
			return apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", path))
		}
		if err := unstructured.SetNestedField(o.Object, int64(replicas), splitPath(path)...); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	return nil
}

// removedReplicasAreZero sets spec.replicas to 0 where an apply of the
// scale removed it (its manager no longer applies it and nobody else
// has it): kube-apiserver's Scale then has replicas 0, which it writes
// to the parent.
func removedReplicasAreZero(obj any) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo[int32](0)
		}
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo[int32](0)
		}
	case *appsv1.StatefulSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo[int32](0)
		}
	case *corev1.ReplicationController:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo[int32](0)
		}
	}
}

// withoutReplicas returns a copy of obj (a Deployment, ReplicaSet,
// StatefulSet or ReplicationController) without spec.replicas.
func withoutReplicas(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		c := *o
		c.Spec.Replicas = nil
		return &c
	case *appsv1.ReplicaSet:
		c := *o
		c.Spec.Replicas = nil
		return &c
	case *appsv1.StatefulSet:
		c := *o
		c.Spec.Replicas = nil
		return &c
	case *corev1.ReplicationController:
		c := *o
		c.Spec.Replicas = nil
		return &c
	}
	return obj
}

// scaleOf returns the Scale of a Deployment, ReplicaSet, StatefulSet or
// ReplicationController.
func scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	sc, _ := scaleFor(obj, restInfo{}, false)
	return sc
}

// unsetReplicas stands for a custom resource's spec replicas field that is
// not set, in the Scale a patch applies to: the patch must set it.
const unsetReplicas = math.MinInt32

// scaleFor returns the Scale of a Deployment, ReplicaSet, StatefulSet,
// ReplicationController or custom resource (parent describes its kind).
// A custom resource without spec replicas is an error to read, and has
// unsetReplicas to write.
func scaleFor(obj runtime.Object, parent restInfo, read bool) (*autoscalingv1.Scale, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && parent.scale != nil {
		return customScale(u, parent.scale, read)
	}
	var sc autoscalingv1.Scale
	var replicas *int32
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sc.ObjectMeta, replicas, sel, sc.Status.Replicas = o.ObjectMeta, o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	case *appsv1.ReplicaSet:
		sc.ObjectMeta, replicas, sel, sc.Status.Replicas = o.ObjectMeta, o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	case *appsv1.StatefulSet:
		sc.ObjectMeta, replicas, sel, sc.Status.Replicas = o.ObjectMeta, o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	case *corev1.ReplicationController:
		sc.ObjectMeta, replicas, sel, sc.Status.Replicas = o.ObjectMeta, o.Spec.Replicas, labelSelectorFor(o.Spec.Selector), o.Status.Replicas
	}
	sc.ObjectMeta = metav1.ObjectMeta{
		Name: sc.Name, Namespace: sc.Namespace, UID: sc.UID, ResourceVersion: sc.ResourceVersion, CreationTimestamp: sc.CreationTimestamp,
	}
	if replicas != nil {
		sc.Spec.Replicas = *replicas
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && sel != nil {
		sc.Status.Selector = s.String()
	}
	return &sc, nil
}

// customScale reads a custom resource's Scale from the paths of its
// kind's scale subresource: the replicas are 0 when absent, and a field of
// the wrong type is an error.
func customScale(u *unstructured.Unstructured, paths *CustomScale, read bool) (*autoscalingv1.Scale, error) {
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
	}}
	spec, found, err := unstructured.NestedInt64(u.Object, splitPath(paths.SpecReplicasPath)...)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	switch {
	case found:
		sc.Spec.Replicas = int32(spec)
	case read:
		return nil, apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", paths.SpecReplicasPath))
	default:
		sc.Spec.Replicas = unsetReplicas
	}
	status, _, err := unstructured.NestedInt64(u.Object, splitPath(paths.StatusReplicasPath)...)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	sc.Status.Replicas = int32(status)
	if paths.LabelSelectorPath != "" {
		if sc.Status.Selector, _, err = unstructured.NestedString(u.Object, splitPath(paths.LabelSelectorPath)...); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	return sc, nil
}

// splitPath splits a CRD field path such as ".spec.replicas".
func splitPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }
