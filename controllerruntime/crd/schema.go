package crd

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// versionSchema is the schema of one version of a CRD, as kube-apiserver
// serves it: the structural schema prunes and defaults what is decoded,
// and apiextensions-apiserver's registry strategy for custom resources
// validates (OpenAPI schema, embedded metadata, list types, CEL rules,
// the scale subresource's fields).
type versionSchema struct {
	structural      *structuralschema.Structural // nil with spec.preserveUnknownFields
	preserveUnknown bool
	strategy        validator
	status          validator
}

var _ memcluster.CustomSchema = (*versionSchema)(nil)

// validator is what versionSchema uses of the registry's strategies
// (customresource.NewStrategy and NewStatusStrategy return unexported
// types).
type validator interface {
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// newVersionSchema builds the schema of version v of crd, served under
// kind (the CRD's accepted kind), as kube-apiserver's CRD handler builds
// its strategy.
func newVersionSchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, kind schema.GroupVersionKind) (*versionSchema, error) {
	validation, err := apihelpers.GetSchemaForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	var props *apiextensionsinternal.JSONSchemaProps
	if validation != nil {
		in := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(validation, in, nil); err != nil {
			return nil, fmt.Errorf("version %s: converting the schema: %w", v.Name, err)
		}
		props = in.OpenAPIV3Schema
	}
	vs := &versionSchema{preserveUnknown: crd.Spec.PreserveUnknownFields}
	s, err := structuralschema.NewStructural(props)
	switch {
	case err != nil && !vs.preserveUnknown:
		return nil, fmt.Errorf("version %s: the schema is not structural: %w", v.Name, err)
	case err == nil:
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, fmt.Errorf("version %s: pruning the defaults: %w", v.Name, err)
		}
		vs.structural = s
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("version %s: %w", v.Name, err)
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	sub, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	if sub != nil {
		if sub.Status != nil {
			status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
			if props != nil {
				if st, ok := props.Properties["status"]; ok {
					if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
						return nil, fmt.Errorf("version %s: the status schema: %w", v.Name, err)
					}
				}
			}
		}
		if sub.Scale != nil {
			scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, scale, nil); err != nil {
				return nil, fmt.Errorf("version %s: the scale subresource: %w", v.Name, err)
			}
		}
	}
	strategy := customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(), crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		kind, schemaValidator, statusValidator, vs.structural, status, scale, v.SelectableFields)
	vs.strategy = strategy
	vs.status = customresource.NewStatusStrategy(strategy)
	return vs, nil
}

// Coerce does what kube-apiserver's decoding does to a custom resource:
// the metadata is decoded and re-encoded (dropping what ObjectMeta does
// not have), unknown fields and nulls the schema does not allow are
// pruned, and the metadata of embedded resources is coerced.
func (s *versionSchema) Coerce(obj map[string]any) ([]string, error) {
	u := unstructured.Unstructured{Object: obj}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	meta, hasMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	if s.structural != nil {
		if !s.preserveUnknown {
			unknown = append(unknown, structuralpruning.PruneWithOptions(obj, s.structural, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
		}
		ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, s.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
		if ferr != nil {
			return nil, ferr
		}
		unknown = append(unknown, paths...)
	}
	if kind != "" {
		u.SetKind(kind)
	}
	if apiVersion != "" {
		u.SetAPIVersion(apiVersion)
	}
	if hasMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			return nil, err
		}
	}
	slices.Sort(unknown)
	return slices.Compact(unknown), nil
}

// Default applies the schema's defaults.
func (s *versionSchema) Default(obj map[string]any) {
	if s.structural != nil {
		structuraldefaulting.Default(obj, s.structural)
	}
}

// Validate validates a custom resource to be created.
func (s *versionSchema) Validate(obj *unstructured.Unstructured) field.ErrorList {
	return s.strategy.Validate(context.Background(), obj)
}

// ValidateUpdate validates an update of old to obj.
func (s *versionSchema) ValidateUpdate(obj, old *unstructured.Unstructured) field.ErrorList {
	return s.strategy.ValidateUpdate(context.Background(), obj, old)
}

// ValidateStatusUpdate validates a status write.
func (s *versionSchema) ValidateStatusUpdate(obj, old *unstructured.Unstructured) field.ErrorList {
	return s.status.ValidateUpdate(context.Background(), obj, old)
}
