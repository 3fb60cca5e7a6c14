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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The scale subresource (autoscaling/v1 Scale) of Deployments and
// ReplicaSets: what kubectl scale and the HorizontalPodAutoscaler use. A
// write of the Scale is an update of spec.replicas (admitted as an update
// of the parent resource), conditional on the Scale's resourceVersion
// when it has one.

func hasScale(in restInfo) bool {
	return in.scale != nil || in.gvk == appsv1.SchemeGroupVersion.WithKind("Deployment") || in.gvk == appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
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
		sc, err = scaleOf(out, s.in, r.Method == http.MethodGet)
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
	cs, err := scaleOf(cur, s.in, false)
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(cs)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
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

// writeScale sets spec.replicas of the parent to the scale's.
func writeScale(r *http.Request, rq request, s *served, sc *autoscalingv1.Scale) (runtime.Object, error) {
	for try := 0; ; try++ {
		cur, ok := s.peek(rq.namespace, rq.name)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: s.in.gvk.Group, Resource: s.in.resource}, rq.name)
		}
		switch o := cur.(type) {
		case *appsv1.Deployment:
			o.Spec.Replicas = ptrTo(sc.Spec.Replicas)
		case *appsv1.ReplicaSet:
			o.Spec.Replicas = ptrTo(sc.Spec.Replicas)
		case *unstructured.Unstructured:
			path := s.in.scale.SpecReplicasPath
			if sc.Spec.Replicas == unsetReplicas {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", path))
			}
			if err := unstructured.SetNestedField(o.Object, int64(sc.Spec.Replicas), splitPath(path)...); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		if sc.ResourceVersion != "" {
			cur.(Object).SetResourceVersion(sc.ResourceVersion)
		}
		out, err := s.update(r.Context(), rq.namespace, cur, false)
		if apierrors.IsConflict(err) && sc.ResourceVersion == "" && try < maxScaleRetries {
			continue
		}
		return out, err
	}
}

// unsetReplicas stands for a custom resource's spec replicas field that is
// not set, in the Scale a patch applies to: the patch must set it.
const unsetReplicas = math.MinInt32

// scaleOf returns the Scale of a Deployment, a ReplicaSet or a custom
// resource (parent describes its kind). A custom resource without spec
// replicas is an error to read, and has unsetReplicas to write.
func scaleOf(obj runtime.Object, parent restInfo, read bool) (*autoscalingv1.Scale, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
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
