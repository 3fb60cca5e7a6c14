package crd

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// customKind returns the kind memcluster serves for crd, under its
// accepted names, as kube-apiserver serves an established CRD.
func customKind(crd *apiextensionsv1.CustomResourceDefinition) (memcluster.CustomKind, error) {
	names := crd.Status.AcceptedNames
	k := memcluster.CustomKind{
		Group:             crd.Spec.Group,
		Kind:              names.Kind,
		ListKind:          names.ListKind,
		Plural:            names.Plural,
		Singular:          names.Singular,
		ShortNames:        names.ShortNames,
		Categories:        names.Categories,
		ClusterScoped:     crd.Spec.Scope == apiextensionsv1.ClusterScoped,
		WebhookConversion: crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter,
		TypeConverter:     &lazyTypeConverter{crd: crd.DeepCopy()},
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
		vs, err := newVersionSchema(crd, v, gvk)
		if err != nil {
			return k, fmt.Errorf("crd: %s: %w", crd.Name, err)
		}
		cv := memcluster.CustomVersion{Name: v.Name, Served: v.Served, Storage: v.Storage, Schema: vs}
		for _, f := range v.SelectableFields {
			cv.SelectableFields = append(cv.SelectableFields, f.JSONPath)
		}
		sub, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return k, fmt.Errorf("crd: %s: %w", crd.Name, err)
		}
		if sub != nil {
			cv.Status = sub.Status != nil
			if sc := sub.Scale; sc != nil {
				cv.Scale = &memcluster.CustomScale{SpecReplicasPath: sc.SpecReplicasPath, StatusReplicasPath: sc.StatusReplicasPath}
				if sc.LabelSelectorPath != nil {
					cv.Scale.LabelSelectorPath = *sc.LabelSelectorPath
				}
			}
		}
		k.Versions = append(k.Versions, cv)
	}
	return k, nil
}

// lazyTypeConverter is the type information of a CRD's kind for
// server-side apply, built as kube-apiserver builds it (the OpenAPI v3
// document of every version, merged, given to managedfields) at its first
// use: most tests never apply, and building it costs milliseconds per CRD.
type lazyTypeConverter struct {
	crd  *apiextensionsv1.CustomResourceDefinition
	once sync.Once
	tc   managedfields.TypeConverter
	err  error
}

var _ managedfields.TypeConverter = (*lazyTypeConverter)(nil)

func (l *lazyTypeConverter) get() (managedfields.TypeConverter, error) {
	l.once.Do(func() {
		var specs []*spec3.OpenAPI
		for _, v := range l.crd.Spec.Versions {
			s, err := builder.BuildOpenAPIV3(l.crd, v.Name, builder.Options{})
			if err != nil {
				l.err = fmt.Errorf("crd: %s: the OpenAPI schema of %s: %w", l.crd.Name, v.Name, err)
				return
			}
			specs = append(specs, s)
		}
		merged, err := builder.MergeSpecsV3(specs...)
		if err != nil {
			l.err = fmt.Errorf("crd: %s: merging the OpenAPI schemas: %w", l.crd.Name, err)
			return
		}
		l.tc, l.err = managedfields.NewTypeConverter(merged.Components.Schemas, l.crd.Spec.PreserveUnknownFields)
	})
	return l.tc, l.err
}

// ObjectToTyped converts obj to a typed value of its kind's schema.
func (l *lazyTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc, err := l.get()
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(obj, opts...)
}

// TypedToObject converts a typed value back to an object.
func (l *lazyTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	tc, err := l.get()
	if err != nil {
		return nil, err
	}
	return tc.TypedToObject(v)
}
