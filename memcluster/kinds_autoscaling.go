package memcluster

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
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
	specGeneration(&k, func(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscalerSpec { return &h.Spec })
	withStatus(&k, func(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscalerStatus { return &h.Status }, false, nil)
	return k
}

func validateHPA(h, _ *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	spec := field.NewPath("spec")
	s := &h.Spec
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(spec.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
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
	return errs
}
