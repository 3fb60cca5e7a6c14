package admission

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// What the admission plugins need to know about the objects of a request
// (admission.ObjectInterfaces). kube-apiserver hands them its internal
// types and converts to the version a webhook asks for; the cluster
// stores the external types, so an object is already in its request's
// version, and the only conversions are to itself (the mutating webhooks'
// result is copied back into the request's object) and between the
// versions of a custom resource (which change its apiVersion, as a
// CustomResourceDefinition without a conversion webhook does).

// objects returns the ObjectInterfaces of req.
func (e *environment) objects(req *admit.Request) admission.ObjectInterfaces {
	_, custom := req.Object.(*unstructured.Unstructured)
	if req.Object == nil {
		_, custom = req.OldObject.(*unstructured.Unstructured)
	}
	return objectInterfaces{scheme: e.scheme, builtin: e.builtin, custom: custom, defaulter: req.Default, mapper: e.equivalents}
}

type objectInterfaces struct {
	scheme    *runtime.Scheme
	builtin   *runtime.Scheme // client-go's kinds alone
	custom    bool            // the request's objects are custom resources (unstructured)
	defaulter func(runtime.Object)
	mapper    runtime.EquivalentResourceMapper
}

var _ admission.ObjectInterfaces = objectInterfaces{}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater { return o }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper     { return o.scheme }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter {
	return defaulterFunc(o.defaulter)
}
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return convertor{o.scheme} }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.mapper
}

// New returns an empty object of gvk: a custom resource's is
// unstructured, whatever Go type the scheme may have for it.
func (o objectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if o.custom && !o.builtin.Recognizes(gvk) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	return o.scheme.New(gvk)
}

type defaulterFunc func(runtime.Object)

func (f defaulterFunc) Default(obj runtime.Object) {
	if f != nil {
		f(obj)
	}
}

// convertor converts between an object and itself, between the versions
// of a custom resource, and between a custom resource and its Go type.
type convertor struct{ scheme *runtime.Scheme }

var _ runtime.ObjectConvertor = convertor{}

func (c convertor) Convert(in, out, _ any) error {
	switch i := in.(type) {
	case *unstructured.Unstructured:
		if o, ok := out.(*unstructured.Unstructured); ok {
			apiVersion := o.GetAPIVersion()
			o.Object = runtime.DeepCopyJSON(i.Object)
			if apiVersion != "" {
				o.SetAPIVersion(apiVersion)
			}
			return nil
		}
		if o, ok := out.(runtime.Object); ok {
			return runtime.DefaultUnstructuredConverter.FromUnstructured(i.Object, o)
		}
	case runtime.Object:
		if o, ok := out.(*unstructured.Unstructured); ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(i)
			if err != nil {
				return err
			}
			apiVersion := o.GetAPIVersion()
			o.Object = m
			if apiVersion != "" {
				o.SetAPIVersion(apiVersion)
			}
			return nil
		}
		iv, ov := reflect.ValueOf(in), reflect.ValueOf(out)
		if iv.Type() == ov.Type() && iv.Kind() == reflect.Pointer {
			ov.Elem().Set(iv.Elem()) // in is the dispatcher's own decoded object
			return nil
		}
		return c.scheme.Convert(in, out, nil)
	}
	return fmt.Errorf("admission: cannot convert %T to %T", in, out)
}

func (c convertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	if u, ok := in.(*unstructured.Unstructured); ok {
		if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()}); ok {
			out := u.DeepCopy()
			out.SetGroupVersionKind(target)
			return out, nil
		}
	}
	return c.scheme.ConvertToVersion(in, gv)
}

func (c convertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return c.scheme.ConvertFieldLabel(gvk, label, value)
}

// builtinScheme is client-go's kinds, in a scheme of its own (client-go's
// global one also holds what suites register there).
func builtinScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s) // only fails for a conflicting registration, which a new scheme cannot have
	return s
}

// equivalents answers which resources are the same as another in other
// versions (matchPolicy Equivalent), and the kind of a resource or its
// subresource, from the cluster's discovery, read again when a resource
// it does not know is asked for (a CustomResourceDefinition served since).
type equivalents struct {
	discovery discovery.DiscoveryInterface

	mu    sync.Mutex
	reg   runtime.EquivalentResourceRegistry
	known map[schema.GroupVersionResource]bool
}

var _ runtime.EquivalentResourceMapper = (*equivalents)(nil)

func (e *equivalents) EquivalentResourcesFor(r schema.GroupVersionResource, sub string) []schema.GroupVersionResource {
	return e.registry(r).EquivalentResourcesFor(r, sub)
}

func (e *equivalents) KindFor(r schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	return e.registry(r).KindFor(r, sub)
}

// registry returns the registry, read again from discovery if it does
// not know r.
func (e *equivalents) registry(r schema.GroupVersionResource) runtime.EquivalentResourceRegistry {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reg != nil && e.known[r] {
		return e.reg
	}
	reg := runtime.NewEquivalentResourceRegistry()
	known := map[schema.GroupVersionResource]bool{}
	_, lists, _ := e.discovery.ServerGroupsAndResources() // partial results are fine: what is known is registered
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range list.APIResources {
			name, sub, _ := cutSubresource(res.Name)
			gvr := gv.WithResource(name)
			kind := gv.WithKind(res.Kind)
			if res.Group != "" || res.Version != "" {
				kind = schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
			}
			reg.RegisterKindFor(gvr, sub, kind)
			known[gvr] = true
			if name == "namespaces" && gv.Group == "" {
				reg.RegisterKindFor(gvr, "finalize", gv.WithKind("Namespace"))
			}
		}
	}
	e.reg, e.known = reg, known
	return reg
}

func cutSubresource(name string) (resource, sub string, ok bool) {
	for i := range len(name) {
		if name[i] == '/' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}
