package memcluster

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KindOptions adjusts the [Kind] that [KindFor] derives from a Go type.
// The zero value derives everything.
type KindOptions struct {
	// GVK selects the kind when the type is registered under several in
	// the scheme. Empty: the type's only kind.
	GVK schema.GroupVersionKind
	// Resource is the lower-case plural name ("webapps"). Empty: the
	// plural apimachinery's meta.UnsafeGuessKindToResource guesses ("Policy"
	// gives "policies"), which kubebuilder's usually agrees with; set it if
	// your CRD's spec.names.plural says otherwise.
	Resource string
	// ClusterScoped kinds ignore namespaces (kubebuilder's
	// +kubebuilder:resource:scope=Cluster).
	ClusterScoped bool
	// NoStatusSubresource turns the status subresource off for a type
	// that has a Status field (a CRD without
	// +kubebuilder:subresource:status): updates then write the status
	// too, and status writes are not found.
	NoStatusSubresource bool
}

// KindFor derives a [Kind] for any API type registered in s — your custom
// resources' Go types, or k8s.io/api types this package does not model —
// with the semantics kube-apiserver gives them:
//
//   - A type with a Status field has a status subresource (unless
//     [KindOptions.NoStatusSubresource]): create resets the status, update
//     keeps the stored one, and a status write changes the status only.
//   - Custom resources (types outside k8s.io/api): the generation is
//     bumped by any change outside metadata (the status excluded when it
//     is a subresource), an update must carry a resourceVersion, and
//     strategic merge patches are refused with 415, all as for CRDs.
//   - k8s.io/api types: the generation is bumped by changes of the Spec
//     field (if any); updates without a resourceVersion are allowed;
//     strategic merge patches use the struct tags' merge keys.
//
// There are no defaults and no validation beyond metadata's (no OpenAPI
// schema, no admission): set [Kind.Default] and [Kind.Validate] on the
// result for yours. The list type (the kind with a "List" suffix) must be
// registered too. Add the kind to a cluster with [NewResource], e.g.
//
//	k, err := memcluster.KindFor(scheme, &v1.WebApp{}, memcluster.KindOptions{})
//	webapps := memcluster.NewResource(c, k)
func KindFor[T Object](s *runtime.Scheme, example T, o KindOptions) (Kind[T], error) {
	var none Kind[T]
	gvk, err := schemeKind(s, example, o.GVK)
	if err != nil {
		return none, err
	}
	typ := reflect.TypeOf(example)
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return none, fmt.Errorf("memcluster: %s: %v is not a pointer to a struct", gvk, typ)
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if !s.Recognizes(listGVK) {
		return none, fmt.Errorf("memcluster: the scheme has no %s for %s", listGVK.Kind, gvk)
	}
	resource := o.Resource
	if resource == "" {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resource = plural.Resource
	}
	builtin := strings.HasPrefix(typ.Elem().PkgPath(), "k8s.io/api/")
	newObj := func() T { return reflect.New(typ.Elem()).Interface().(T) }
	k := Kind[T]{
		GVK:           gvk,
		Resource:      resource,
		ClusterScoped: o.ClusterScoped,
		New:           newObj,
		NewList: func() runtime.Object {
			l, err := s.New(listGVK)
			if err != nil { // checked above; a scheme does not forget types
				panic(fmt.Sprintf("memcluster: %s: %v", listGVK, err))
			}
			return l
		},
		NoStrategicMerge: !builtin,
	}
	status, hasStatus := typ.Elem().FieldByName("Status")
	hasStatus = hasStatus && status.IsExported() && !o.NoStatusSubresource
	if hasStatus {
		k.CopyStatus = func(dst, src T) {
			v := reflect.ValueOf(src.DeepCopyObject()).Elem().FieldByIndex(status.Index)
			reflect.ValueOf(dst).Elem().FieldByIndex(status.Index).Set(v)
		}
		k.PrepareCreate = func(obj T) {
			f := reflect.ValueOf(obj).Elem().FieldByIndex(status.Index)
			f.Set(reflect.Zero(f.Type()))
		}
	}
	switch spec, hasSpec := typ.Elem().FieldByName("Spec"); {
	case !builtin:
		k.Generation = func(obj T) any { return nonMetadata(obj) }
		k.RequireResourceVersion = true
	case hasSpec && spec.IsExported():
		k.Generation = func(obj T) any { return reflect.ValueOf(obj).Elem().FieldByIndex(spec.Index).Interface() }
	}
	return k, nil
}

// schemeKind returns the kind of example in s: want if set (and
// registered for its type), else its only one.
func schemeKind(s *runtime.Scheme, example runtime.Object, want schema.GroupVersionKind) (schema.GroupVersionKind, error) {
	gvks, unversioned, err := s.ObjectKinds(example)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("memcluster: %w", err)
	}
	if unversioned {
		return schema.GroupVersionKind{}, fmt.Errorf("memcluster: %T is an unversioned type", example)
	}
	if !want.Empty() {
		for _, g := range gvks {
			if g == want {
				return g, nil
			}
		}
		return schema.GroupVersionKind{}, fmt.Errorf("memcluster: %T is not registered as %s (but as %v)", example, want, gvks)
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("memcluster: %T is registered as %d kinds %v; choose one with KindOptions.GVK", example, len(gvks), gvks)
	}
	return gvks[0], nil
}

// nonMetadata returns what bumps a custom resource's generation: the
// object as JSON without its metadata (and type meta).
func nonMetadata(obj runtime.Object) any {
	b, err := json.Marshal(obj)
	if err != nil {
		return err.Error() // a type that cannot be encoded cannot be stored either
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err.Error()
	}
	delete(m, "metadata")
	delete(m, "apiVersion")
	delete(m, "kind")
	return m
}
