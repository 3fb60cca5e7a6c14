package memcluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The apps/v1 kinds besides Deployments and ReplicaSets.

func statefulSetKind() Kind[*appsv1.StatefulSet] {
	k := builtinKindOf(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "statefulsets",
		func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, func() runtime.Object { return &appsv1.StatefulSetList{} })
	k.ShortNames, k.Categories = []string{"sts"}, []string{"all"}
	k.validName = apivalidation.NameIsDNSLabel
	k.Default = func(ss *appsv1.StatefulSet) {
		defaults.StatefulSet(ss)
		// kube-apiserver's conversion gives the claim templates their kind.
		for i := range ss.Spec.VolumeClaimTemplates {
			ss.Spec.VolumeClaimTemplates[i].APIVersion, ss.Spec.VolumeClaimTemplates[i].Kind = "v1", "PersistentVolumeClaim"
		}
	}
	k.Validate = validateStatefulSet
	specGeneration(&k, func(s *appsv1.StatefulSet) *appsv1.StatefulSetSpec { return &s.Spec })
	withStatus(&k, func(s *appsv1.StatefulSet) *appsv1.StatefulSetStatus { return &s.Status }, false, nil)
	return k
}

func validateStatefulSet(ss, old *appsv1.StatefulSet) field.ErrorList {
	spec := field.NewPath("spec")
	s := &ss.Spec
	var errs field.ErrorList
	switch s.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(spec.Child("podManagementPolicy"), s.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	us := spec.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(us.Child("rollingUpdate"), s.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := s.UpdateStrategy.RollingUpdate; ru != nil {
			p := us.Child("rollingUpdate")
			if ru.Partition != nil {
				errs = append(errs, nonNegative(int64(*ru.Partition), p.Child("partition"))...)
			}
			if mu := ru.MaxUnavailable; mu != nil {
				errs = append(errs, intOrPercent(*mu, p.Child("maxUnavailable"))...)
				if intOrPercentValue(*mu) == 0 {
					errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *mu, "cannot be 0"))
				}
				errs = append(errs, notOver100(*mu, p.Child("maxUnavailable"))...)
			}
		}
	default:
		errs = append(errs, field.Invalid(us, s.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if rp := s.PersistentVolumeClaimRetentionPolicy; rp != nil {
		p := spec.Child("persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", rp.WhenDeleted}, {"whenScaled", rp.WhenScaled}} {
			switch f.v {
			case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
			default:
				errs = append(errs, field.NotSupported(p.Child(f.name), f.v, []string{
					string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)}))
			}
		}
	}
	if old == nil {
		for i := range s.VolumeClaimTemplates {
			errs = append(errs, validateClaimTemplate(&s.VolumeClaimTemplates[i], spec.Child("volumeClaimTemplates").Index(i))...)
		}
	}
	errs = append(errs, nonNegative(int64(*s.Replicas), spec.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		errs = append(errs, nonNegative(int64(s.Ordinals.Start), spec.Child("ordinals.start"))...)
	}
	if old == nil && s.ServiceName != "" {
		for _, msg := range validation.IsDNS1123Label(s.ServiceName) {
			errs = append(errs, field.Invalid(spec.Child("serviceName"), s.ServiceName, msg))
		}
	}
	errs = append(errs, validateSelector(s.Selector, s.Template, "statefulset", spec)...)
	if s.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	if old != nil {
		o := &old.Spec
		errs = append(errs, immutable(s.Selector, o.Selector, spec.Child("selector"))...)
		errs = append(errs, immutable(s.VolumeClaimTemplates, o.VolumeClaimTemplates, spec.Child("volumeClaimTemplates"))...)
		errs = append(errs, immutable(s.ServiceName, o.ServiceName, spec.Child("serviceName"))...)
		errs = append(errs, immutable(s.PodManagementPolicy, o.PodManagementPolicy, spec.Child("podManagementPolicy"))...)
	}
	return errs
}

// validateClaimTemplate validates a StatefulSet's volume claim template
// as a claim.
func validateClaimTemplate(pvc *corev1.PersistentVolumeClaim, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(pvc.Labels, path.Child("metadata", "labels"))
	return append(errs, validateClaimSpec(&pvc.Spec, path.Child("spec"))...)
}

// The DaemonSet's template generation is kept in this annotation in
// apps/v1: 1 on create, bumped by every change of the template.
const templateGenerationAnnotation = "deprecated.daemonset.template.generation"

func daemonSetKind() Kind[*appsv1.DaemonSet] {
	k := builtinKindOf(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), "daemonsets",
		func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} }, func() runtime.Object { return &appsv1.DaemonSetList{} })
	k.ShortNames, k.Categories = []string{"ds"}, []string{"all"}
	k.Default = defaults.DaemonSet
	k.Validate = validateDaemonSet
	k.PrepareCreate = func(ds *appsv1.DaemonSet) {
		if templateGeneration(ds) < 1 {
			setTemplateGeneration(ds, 1)
		}
	}
	k.PrepareUpdate = func(ds, old *appsv1.DaemonSet) field.ErrorList {
		// The template is compared as kube-apiserver compares it: defaulted.
		defaults.DaemonSet(ds)
		g := templateGeneration(old)
		if !apiequality.Semantic.DeepEqual(ds.Spec.Template, old.Spec.Template) {
			g++
		}
		setTemplateGeneration(ds, g)
		return nil
	}
	// kube-apiserver keeps the template generation in its internal type
	// and writes it into the annotation when it converts to apps/v1, as
	// for the object its field manager compares: the creator of a
	// DaemonSet owns the annotation, sent or not.
	k.fieldManagerView = func(ds *appsv1.DaemonSet) {
		if _, ok := ds.Annotations[templateGenerationAnnotation]; !ok {
			setTemplateGeneration(ds, 0)
		}
	}
	specGeneration(&k, func(ds *appsv1.DaemonSet) *appsv1.DaemonSetSpec { return &ds.Spec })
	withStatus(&k, func(ds *appsv1.DaemonSet) *appsv1.DaemonSetStatus { return &ds.Status }, false, nil)
	return k
}

func templateGeneration(ds *appsv1.DaemonSet) int64 {
	g, err := strconv.ParseInt(ds.Annotations[templateGenerationAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return g
}

func setTemplateGeneration(ds *appsv1.DaemonSet, g int64) {
	a := maps.Clone(ds.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[templateGenerationAnnotation] = strconv.FormatInt(g, 10)
	ds.Annotations = a
}

func validateDaemonSet(ds, old *appsv1.DaemonSet) field.ErrorList {
	spec := field.NewPath("spec")
	s := &ds.Spec
	errs := metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	if s.Selector != nil && len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(spec.Child("selector"), s.Selector, "empty selector is invalid for daemonset"))
	}
	errs = append(errs, validatePodTemplate(&s.Template, spec.Child("template"))...)
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), s.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if s.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	us := spec.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru, p := s.UpdateStrategy.RollingUpdate, us.Child("rollingUpdate")
		mu, ms := ptrValue(ru.MaxUnavailable), ptrValue(ru.MaxSurge)
		errs = append(errs, intOrPercent(mu, p.Child("maxUnavailable"))...)
		errs = append(errs, intOrPercent(ms, p.Child("maxSurge"))...)
		errs = append(errs, notOver100(mu, p.Child("maxUnavailable"))...)
		errs = append(errs, notOver100(ms, p.Child("maxSurge"))...)
		switch u, sg := intOrPercentValue(mu) != 0, intOrPercentValue(ms) != 0; {
		case u && sg:
			errs = append(errs, field.Invalid(p.Child("maxSurge"), ms, "may not be set when maxUnavailable is non-zero"))
		case !u && !sg:
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(us, s.UpdateStrategy,
			[]string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}))
	}
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
	}
	if old != nil {
		errs = append(errs, immutable(s.Selector, old.Spec.Selector, spec.Child("selector"))...)
	}
	return errs
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func controllerRevisionKind() Kind[*appsv1.ControllerRevision] {
	k := builtinKindOf(appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), "controllerrevisions",
		func() *appsv1.ControllerRevision { return &appsv1.ControllerRevision{} }, func() runtime.Object { return &appsv1.ControllerRevisionList{} })
	k.Validate = func(r, old *appsv1.ControllerRevision) field.ErrorList {
		errs := nonNegative(r.Revision, field.NewPath("revision"))
		if old != nil {
			return append(errs, immutable(r.Data, old.Data, field.NewPath("data"))...)
		}
		var v any
		switch data := field.NewPath("data"); {
		case r.Data.Raw == nil:
			errs = append(errs, field.Required(data, "data is mandatory"))
		case json.Unmarshal(r.Data.Raw, &v) != nil:
			errs = append(errs, field.Invalid(data, "<value omitted>", "error parsing data"))
		case v == nil:
			errs = append(errs, field.Required(data, "data is mandatory"))
		default:
			if _, ok := v.(map[string]any); !ok {
				errs = append(errs, field.Required(data, "data must be a valid JSON object"))
			}
		}
		return errs
	}
	return k
}

// immutable is kube-apiserver's check of a field that may not change.
func immutable(v, old any, path *field.Path) field.ErrorList {
	if apiequality.Semantic.DeepEqual(v, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, "field is immutable")}
}

// notOver100 refuses a percentage above 100%.
func notOver100(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(path, v, "must not be greater than 100%")}
	}
	return nil
}
