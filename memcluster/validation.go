package memcluster

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The validation below is the subset of the apiserver's that controllers
// depend on, with the apiserver's field paths and messages.

func validateDeployment(d, old *appsv1.Deployment) field.ErrorList {
	spec := field.NewPath("spec")
	s := &d.Spec
	errs := nonNegative(int64(*s.Replicas), spec.Child("replicas"))
	errs = append(errs, validateSelector(s.Selector, s.Template, "deployment", spec)...)
	errs = append(errs, validateStrategy(s.Strategy, spec.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
	}
	if p := s.ProgressDeadlineSeconds; p != nil {
		errs = append(errs, nonNegative(int64(*p), spec.Child("progressDeadlineSeconds"))...)
		if *p <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
		}
	}
	if old != nil && !apiequality.Semantic.DeepEqual(s.Selector, old.Spec.Selector) {
		errs = append(errs, field.Invalid(spec.Child("selector"), s.Selector, "field is immutable"))
	}
	return errs
}

func validateReplicaSet(rs, old *appsv1.ReplicaSet) field.ErrorList {
	spec := field.NewPath("spec")
	s := &rs.Spec
	errs := nonNegative(int64(*s.Replicas), spec.Child("replicas"))
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, validateSelector(s.Selector, s.Template, "replicaset", spec)...)
	if old != nil && !apiequality.Semantic.DeepEqual(s.Selector, old.Spec.Selector) {
		errs = append(errs, field.Invalid(spec.Child("selector"), s.Selector, "field is immutable"))
	}
	return errs
}

func validatePod(p, old *corev1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validatePodSpec(&p.Spec, spec)
	if old != nil && !podSpecUpdateAllowed(&p.Spec, &old.Spec) {
		errs = append(errs, field.Forbidden(spec, "pod updates may not change fields other than "+
			"`spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, "+
			"`spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds`"))
	}
	return errs
}

// podSpecUpdateAllowed masks the mutable fields of a pod spec and compares
// the rest. Binding (setting spec.nodeName) goes through the kubelet, not
// Update, but an unchanged nodeName is of course fine.
func podSpecUpdateAllowed(s, old *corev1.PodSpec) bool {
	a, b := s.DeepCopy(), old.DeepCopy()
	for _, sp := range []*corev1.PodSpec{a, b} {
		for i := range sp.Containers {
			sp.Containers[i].Image = ""
		}
		for i := range sp.InitContainers {
			sp.InitContainers[i].Image = ""
		}
		sp.ActiveDeadlineSeconds = nil
		sp.Tolerations = nil
		sp.TerminationGracePeriodSeconds = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func validatePodSpec(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	names := map[string]bool{}
	for i, c := range s.Containers {
		p := path.Child("containers").Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	return errs
}

// validateSelector checks that a controller's selector exists, is not
// empty, and selects its own template; and validates the template.
func validateSelector(sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec, what string, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for "+what))
		}
	}
	tp := spec.Child("template")
	errs = append(errs, metav1validation.ValidateLabels(tmpl.Labels, tp.Child("metadata", "labels"))...)
	if selector, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), sel, "invalid label selector"))
	} else if !selector.Empty() && !selector.Matches(labels.Set(tmpl.Labels)) { // a nil selector matches nothing
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodSpec(&tmpl.Spec, tp.Child("spec"))...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	return errs
}

func validateStrategy(st appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		ru := path.Child("rollingUpdate")
		mu, ms := *st.RollingUpdate.MaxUnavailable, *st.RollingUpdate.MaxSurge
		errs := intOrPercent(mu, ru.Child("maxUnavailable"))
		errs = append(errs, intOrPercent(ms, ru.Child("maxSurge"))...)
		if intOrPercentValue(mu) == 0 && intOrPercentValue(ms) == 0 {
			errs = append(errs, field.Invalid(ru.Child("maxUnavailable"), mu, "may not be 0 when `maxSurge` is 0"))
		}
		if v, ok := percentValue(mu); ok && v > 100 {
			errs = append(errs, field.Invalid(ru.Child("maxUnavailable"), mu, "must not be greater than 100%"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), st.Type,
			[]string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
}

func intOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(path, v, msg))
		}
		return errs
	}
	return nonNegative(int64(v.IntValue()), path)
}

func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, err := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, err == nil
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

func nonNegative(v int64, path *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(path, v, "must be greater than or equal to 0")}
	}
	return nil
}
