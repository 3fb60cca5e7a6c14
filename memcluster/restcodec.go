package memcluster

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// api is the REST view of the cluster's kinds: the stores by resource, and
// a scheme with their Go types for the codecs. It is rebuilt when the
// kinds change.
type api struct {
	c       *Cluster
	changed uint64 // the cluster's kindsChanged it was built at
	scheme  *runtime.Scheme
	codecs  serializer.CodecFactory
	stores  map[schema.GroupVersionResource]*served
	order   []restInfo // registration order, for discovery
}

// served is a store with its description.
type served struct {
	restStore
	in restInfo
}

func buildAPI(c *Cluster, stores []restStore) (*api, error) {
	a := &api{c: c, scheme: runtime.NewScheme(), stores: map[schema.GroupVersionResource]*served{}}
	s := a.scheme
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	metav1.AddToGroupVersion(s, autoscalingv1.SchemeGroupVersion)
	s.AddKnownTypes(autoscalingv1.SchemeGroupVersion, &autoscalingv1.Scale{})
	seen := map[schema.GroupVersion]bool{}
	for _, st := range stores {
		in := st.info()
		gv := in.gvk.GroupVersion()
		if !seen[gv] {
			metav1.AddToGroupVersion(s, gv)
			seen[gv] = true
		}
		if !in.custom {
			if err := addKnownType(s, in.gvk, in.newObj()); err != nil {
				return nil, err
			}
		}
		if in.newList != nil {
			if err := addKnownType(s, in.listGVK(), in.newList()); err != nil {
				return nil, err
			}
		}
		gvr := gv.WithResource(in.resource)
		if prev, dup := a.stores[gvr]; dup {
			return nil, fmt.Errorf("memcluster: cannot serve both %s and %s as %s", prev.in.gvk, in.gvk, gvr)
		}
		a.stores[gvr] = &served{restStore: st, in: in}
		a.order = append(a.order, in)
	}
	a.codecs = serializer.NewCodecFactory(s)
	return a, nil
}

// addKnownType registers obj as gvk, turning the scheme's panic on a
// conflicting registration into an error.
func addKnownType(s *runtime.Scheme, gvk schema.GroupVersionKind, obj runtime.Object) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("memcluster: cannot serve %s: %v", gvk, p)
		}
	}()
	s.AddKnownTypeWithName(gvk, obj)
	return nil
}

// representation is the negotiated form of a response.
type representation struct {
	info    runtime.SerializerInfo
	partial bool // as=PartialObjectMetadata(List): metadata only
}

func (r representation) contentType() string {
	if !r.partial {
		return r.info.MediaType
	}
	return r.info.MediaType + ";g=meta.k8s.io;v=v1;as=PartialObjectMetadata"
}

// negotiate picks the response representation from an Accept header, as
// kube-apiserver does for the parts that clients use: the first clause
// with the highest q among JSON, YAML and protobuf; clauses asking for a
// transformation ("as=") other than PartialObjectMetadata(List) are
// skipped (so aggregated discovery falls back to the legacy documents).
// list tells whether the response is a list, proto whether its Go type
// can be encoded as protobuf (types outside k8s.io/api usually cannot: as
// for custom resources, JSON is then chosen).
func (a *api) negotiate(accept string, list, proto bool) (representation, error) {
	if strings.TrimSpace(accept) == "" {
		return representation{info: a.info(mediaJSON)}, nil
	}
	type clause struct {
		rep representation
		q   float64
	}
	var found []clause
	for _, raw := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(raw))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(s, 64); err != nil || q <= 0 {
				continue
			}
		}
		if mt == "*/*" || mt == "application/*" {
			mt = mediaJSON
		}
		info := a.info(mt)
		if info.MediaType == "" || (mt == runtime.ContentTypeProtobuf && !proto && params["as"] == "") {
			continue
		}
		rep := representation{info: info}
		switch as := params["as"]; {
		case as == "":
		case params["g"] == metav1.GroupName && params["v"] == "v1" &&
			(as == "PartialObjectMetadata" && !list || as == "PartialObjectMetadataList" && list):
			rep.partial = true
		default:
			continue
		}
		found = append(found, clause{rep, q})
	}
	if len(found) == 0 {
		return representation{}, notAcceptable(a.mediaTypes())
	}
	slices.SortStableFunc(found, func(x, y clause) int { return cmp.Compare(y.q, x.q) })
	return found[0].rep, nil
}

const mediaJSON = "application/json"

func (a *api) info(mediaType string) runtime.SerializerInfo {
	for _, in := range a.codecs.SupportedMediaTypes() {
		if in.MediaType == mediaType {
			return in
		}
	}
	return runtime.SerializerInfo{}
}

func (a *api) mediaTypes() []string {
	var out []string
	for _, in := range a.codecs.SupportedMediaTypes() {
		out = append(out, in.MediaType)
	}
	return out
}

func notAcceptable(types []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(types, ", "),
	}}
}

func unsupportedMediaType(mt string, types []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format %q - accepted media types include: %s", mt, strings.Join(types, ", ")),
	}}
}

// encode writes obj in the representation, with the apiVersion and kind
// of gv (objects of other groups, such as Status, keep their own).
func (a *api) encode(w io.Writer, rep representation, gv schema.GroupVersion, obj runtime.Object) error {
	if rep.partial {
		obj, gv = partialMetadata(obj), metav1.SchemeGroupVersion
	}
	if u, ok := obj.(*unstructured.UnstructuredList); ok {
		return unstructured.UnstructuredJSONScheme.Encode(u, w)
	}
	return runtime.WithVersionEncoder{Version: gv, Encoder: rep.info.Serializer, ObjectTyper: a.scheme}.Encode(obj, w)
}

// encodeBytes is encode into a new slice.
func (a *api) encodeBytes(rep representation, gv schema.GroupVersion, obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	err := a.encode(&buf, rep, gv, obj)
	return buf.Bytes(), err
}

// decode reads a request body of the given Content-Type into into, which
// must end up of kind want.
func (a *api) decode(contentType string, body []byte, want schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	mt := mediaJSON
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, unsupportedMediaType(contentType, a.mediaTypes())
		}
	}
	info := a.info(mt)
	if info.MediaType == "" {
		return nil, unsupportedMediaType(mt, a.mediaTypes())
	}
	obj, gvk, err := info.Serializer.Decode(body, &want, into)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", want.Kind, err))
	}
	options := want.Group == metav1.GroupName // options are sent in any group version
	if options && gvk.Kind != want.Kind || !options && (gvk.GroupKind() != want.GroupKind() || gvk.Version != want.Version && gvk.Version != "") {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), want.GroupVersion()))
	}
	clearTypeMeta(obj)
	return obj, nil
}

// newList returns a list of the kind of in holding items, at resourceVersion rv.
func newList(in restInfo, items []runtime.Object, rv string) (runtime.Object, error) {
	if in.newList == nil {
		return unstructuredList(in, items, rv)
	}
	list := in.newList()
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	la.SetResourceVersion(rv)
	return list, nil
}

// unstructuredList serves a kind without a list type as JSON.
func unstructuredList(in restInfo, items []runtime.Object, rv string) (runtime.Object, error) {
	u := &unstructured.UnstructuredList{Object: map[string]any{}}
	u.SetGroupVersionKind(in.listGVK())
	u.SetResourceVersion(rv)
	if in.custom {
		u.SetContinue("") // kube-apiserver's lists of custom resources have it
	}
	for _, it := range items {
		if item, ok := it.(*unstructured.Unstructured); ok {
			u.Items = append(u.Items, *item)
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		item := unstructured.Unstructured{Object: m}
		item.SetAPIVersion(in.gvk.GroupVersion().String())
		item.SetKind(in.gvk.Kind)
		u.Items = append(u.Items, item)
	}
	return u, nil
}

// partialMetadata returns the metadata of obj (a list's items
// included) as PartialObjectMetadata(List).
func partialMetadata(obj runtime.Object) runtime.Object {
	if meta.IsListType(obj) {
		out := &metav1.PartialObjectMetadataList{}
		if la, err := meta.ListAccessor(obj); err == nil {
			out.ResourceVersion = la.GetResourceVersion()
		}
		items, _ := meta.ExtractList(obj)
		for _, it := range items {
			out.Items = append(out.Items, *partialMetadata(it).(*metav1.PartialObjectMetadata))
		}
		return out
	}
	out := &metav1.PartialObjectMetadata{}
	if acc, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := acc.GetObjectMeta().(*metav1.ObjectMeta); ok {
			out.ObjectMeta = *om.DeepCopy()
			return out
		}
	}
	if m, err := meta.Accessor(obj); err == nil {
		out.Name, out.Namespace, out.UID = m.GetName(), m.GetNamespace(), m.GetUID()
		out.ResourceVersion, out.Generation = m.GetResourceVersion(), m.GetGeneration()
		out.Labels, out.Annotations = m.GetLabels(), m.GetAnnotations()
		out.OwnerReferences, out.Finalizers = m.GetOwnerReferences(), m.GetFinalizers()
		out.CreationTimestamp, out.DeletionTimestamp = m.GetCreationTimestamp(), m.GetDeletionTimestamp()
	}
	return out
}
