package memcluster

import (
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// autoscaling/v2 HorizontalPodAutoscalers, served in v2 only. No
// autoscaler runs.

func hpaKind() Kind[*autoscalingv2.HorizontalPodAutoscaler] {
	k := builtinKindOf(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), "horizontalpodautoscalers",
		func() *autoscalingv2.HorizontalPodAutoscaler { return &autoscalingv2.HorizontalPodAutoscaler{} },
		func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} })
	k.ShortNames, k.Categories = []string{"hpa"}, []string{"all"}
	k.Default = defaults.HorizontalPodAutoscaler
	k.Validate = validateHPA
	specGeneration(&k, func(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscalerSpec {
		return &h.Spec
	})
	withStatus(&k, func(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscalerStatus {
		return &h.Status
	}, false, nil)
	return k
}

// validateHPA follows kube-apiserver v1.37, where HPAScaleToZero is on:
// minReplicas may be 0 with an Object or External metric.
func validateHPA(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	spec := field.NewPath("spec")
	s := &h.Spec
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 0"))
	}
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(spec.Child("maxReplicas"), "must be set and greater than 0"))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	ref := spec.Child("scaleTargetRef")
	for _, f := range []struct{ name, v string }{{"kind", s.ScaleTargetRef.Kind}, {"name", s.ScaleTargetRef.Name}} {
		if f.v == "" {
			errs = append(errs, field.Required(ref.Child(f.name), ""))
		}
		for _, msg := range path.IsValidPathSegmentName(f.v) {
			errs = append(errs, field.Invalid(ref.Child(f.name), f.v, msg))
		}
	}
	// The apiVersion names a group (but for the core
	// ReplicationController), unless an update keeps it and the kind.
	t := s.ScaleTargetRef
	if old == nil || old.Spec.ScaleTargetRef.APIVersion != t.APIVersion || old.Spec.ScaleTargetRef.Kind != t.Kind {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(ref.Child("apiVersion"), t.APIVersion, err.Error()))
		case gv.Group == "" && t.Kind != "ReplicationController":
			errs = append(errs, field.Invalid(ref.Child("apiVersion"), t.APIVersion, "apiVersion must specify API group"))
		}
	}
	if s.MinReplicas != nil && *s.MinReplicas == 0 && !slices.ContainsFunc(s.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType
	}) {
		errs = append(errs, field.Forbidden(spec.Child("metrics"), "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}
