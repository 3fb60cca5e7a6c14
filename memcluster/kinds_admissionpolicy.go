package memcluster

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The admission policies of admissionregistration.k8s.io/v1 and their
// bindings (see kinds_admission.go).

func validatingAdmissionPolicyKind(c *Cluster) Kind[*admissionregistrationv1.ValidatingAdmissionPolicy] {
	type O = admissionregistrationv1.ValidatingAdmissionPolicy
	k := admissionKindOf(c, "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		func(o *O) any { return o.Spec }, defaults.ValidatingAdmissionPolicy,
		func(o *O) field.ErrorList {
			s, p := &o.Spec, field.NewPath("spec")
			errs := validatePolicy(p, s.FailurePolicy, s.ParamKind, s.MatchConstraints, s.MatchConditions, false)
			if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
				errs = append(errs,
					field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"),
					field.Required(p.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
			}
			for i, v := range s.Validations {
				vp := p.Child("validations").Index(i)
				if strings.TrimSpace(v.Expression) == "" {
					errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
				}
				if len(v.Message) > 0 && strings.TrimSpace(v.Message) == "" {
					errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "must be non-empty if specified"))
				} else if strings.ContainsAny(v.Message, "\n") {
					errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "message must not contain line breaks"))
				}
				if r := v.Reason; r != nil && *r != "Forbidden" && *r != "Invalid" && *r != "RequestEntityTooLarge" {
					errs = append(errs, field.NotSupported(vp.Child("reason"), *r, []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}))
				}
			}
			keys := map[string]bool{}
			for i, a := range s.AuditAnnotations {
				ap := p.Child("auditAnnotations").Index(i)
				if a.Key == "" {
					errs = append(errs, field.Required(ap.Child("key"), ""))
				} else {
					for _, msg := range utilvalidation.IsQualifiedName(o.Name + "/" + a.Key) {
						errs = append(errs, field.Invalid(ap.Child("key"), a.Key, msg))
					}
				}
				if strings.TrimSpace(a.ValueExpression) == "" {
					errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
				}
				if keys[a.Key] {
					errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
				}
				keys[a.Key] = true
			}
			return append(errs, validateVariables(p.Child("variables"), s.Variables)...)
		})
	withStatus(&k, func(o *O) *admissionregistrationv1.ValidatingAdmissionPolicyStatus { return &o.Status }, false, nil)
	return k
}

func mutatingAdmissionPolicyKind(c *Cluster) Kind[*admissionregistrationv1.MutatingAdmissionPolicy] {
	type O = admissionregistrationv1.MutatingAdmissionPolicy
	return admissionKindOf(c, "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		func(o *O) any { return o.Spec }, defaults.MutatingAdmissionPolicy,
		func(o *O) field.ErrorList {
			s, p := &o.Spec, field.NewPath("spec")
			errs := validatePolicy(p, s.FailurePolicy, s.ParamKind, s.MatchConstraints, s.MatchConditions, true)
			if len(s.Mutations) == 0 {
				errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
			}
			for i, m := range s.Mutations {
				mp := p.Child("mutations").Index(i)
				switch m.PatchType {
				case admissionregistrationv1.PatchTypeApplyConfiguration:
					if m.ApplyConfiguration == nil || strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
						errs = append(errs, field.Required(mp.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
					}
				case admissionregistrationv1.PatchTypeJSONPatch:
					if m.JSONPatch == nil || strings.TrimSpace(m.JSONPatch.Expression) == "" {
						errs = append(errs, field.Required(mp.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
					}
				case "":
					errs = append(errs, field.Required(mp.Child("patchType"), ""))
				default:
					errs = append(errs, field.NotSupported(mp.Child("patchType"), m.PatchType, []string{"ApplyConfiguration", "JSONPatch"}))
				}
			}
			if r := s.ReinvocationPolicy; r == "" {
				errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
			} else if r != admissionregistrationv1.NeverReinvocationPolicy && r != admissionregistrationv1.IfNeededReinvocationPolicy {
				errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), r, []string{"IfNeeded", "Never"}))
			}
			return append(errs, validateVariables(p.Child("variables"), s.Variables)...)
		})
}

// validatePolicy validates what both kinds of policy have.
func validatePolicy(p *field.Path, failure *admissionregistrationv1.FailurePolicyType, param *admissionregistrationv1.ParamKind,
	constraints *admissionregistrationv1.MatchResources, conditions []admissionregistrationv1.MatchCondition, mutating bool) field.ErrorList {
	var errs field.ErrorList
	if failure == nil {
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	} else {
		errs = append(errs, validateFailureAndMatch(p, failure, nil)...)
	}
	if param != nil {
		errs = append(errs, validateParamKind(p.Child("paramKind"), *param)...)
	}
	if constraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(constraints, p.Child("matchConstraints"), mutating)...)
		if len(constraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	return append(errs, validateMatchConditions(p.Child("matchConditions"), conditions)...)
}

func validateParamKind(p *field.Path, k admissionregistrationv1.ParamKind) field.ErrorList {
	var errs field.ErrorList
	switch group, version, n := splitGroupVersion(k.APIVersion); {
	case k.APIVersion == "":
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	case n > 1:
		errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, fmt.Sprintf("unexpected GroupVersion string: %v", k.APIVersion)))
	default:
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), version, strings.Join(msgs, ",")))
		}
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// splitGroupVersion splits "group/version" (or "version"); n is the
// number of slashes.
func splitGroupVersion(gv string) (group, version string, n int) {
	n = strings.Count(gv, "/")
	if gv == "/" {
		return "", "", 0
	}
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return g, v, n
	}
	return "", gv, n
}

func validateVariables(p *field.Path, vars []admissionregistrationv1.Variable) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vars {
		vp := p.Index(i)
		if v.Name == "" || strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
	}
	return errs
}

func validatingAdmissionPolicyBindingKind(c *Cluster) Kind[*admissionregistrationv1.ValidatingAdmissionPolicyBinding] {
	type O = admissionregistrationv1.ValidatingAdmissionPolicyBinding
	return admissionKindOf(c, "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
		func(o *O) any { return o.Spec }, defaults.ValidatingAdmissionPolicyBinding,
		func(o *O) field.ErrorList {
			p := field.NewPath("spec")
			errs := validateBindingSpec(p, o.Spec.PolicyName, o.Spec.ParamRef, o.Spec.MatchResources, false)
			errs = append(errs, validateValidationActions(p.Child("validationActions"), o.Spec.ValidationActions)...)
			return append(errs, requiredLast(p, o.Spec.PolicyName, len(o.Spec.ValidationActions) == 0)...)
		})
}

func mutatingAdmissionPolicyBindingKind(c *Cluster) Kind[*admissionregistrationv1.MutatingAdmissionPolicyBinding] {
	type O = admissionregistrationv1.MutatingAdmissionPolicyBinding
	return admissionKindOf(c, "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		func(o *O) any { return o.Spec }, defaults.MutatingAdmissionPolicyBinding,
		func(o *O) field.ErrorList {
			p := field.NewPath("spec")
			errs := validateBindingSpec(p, o.Spec.PolicyName, o.Spec.ParamRef, o.Spec.MatchResources, true)
			return append(errs, requiredLast(p, o.Spec.PolicyName, false)...)
		})
}

func validateBindingSpec(p *field.Path, policy string, ref *admissionregistrationv1.ParamRef, match *admissionregistrationv1.MatchResources, mutating bool) field.ErrorList {
	var errs field.ErrorList
	if policy != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(policy, false) {
			errs = append(errs, field.Invalid(p.Child("policyName"), policy, msg))
		}
	}
	if ref != nil {
		rp := p.Child("paramRef")
		if ref.Name != "" {
			for _, msg := range path.IsValidPathSegmentName(ref.Name) {
				errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
			}
			if ref.Selector != nil {
				errs = append(errs, field.Forbidden(rp.Child("name"), `name and selector are mutually exclusive`))
			}
		}
		if ref.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(ref.Selector, metav1validation.LabelSelectorValidationOptions{}, rp.Child("selector"))...)
			if ref.Name != "" {
				errs = append(errs, field.Forbidden(rp.Child("selector"), `name and selector are mutually exclusive`))
			}
		}
		if ref.Name == "" && ref.Selector == nil {
			errs = append(errs, field.Required(rp, `one of name or selector must be specified`))
		}
		switch a := ref.ParameterNotFoundAction; {
		case a == nil || *a == "":
			errs = append(errs, field.Required(rp.Child("parameterNotFoundAction"), ""))
		case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
			errs = append(errs, field.NotSupported(rp.Child("parameterNotFoundAction"), ref.ParameterNotFoundAction, []string{"Deny", "Allow"}))
		}
	}
	return append(errs, validateMatchResources(match, p.Child("matchResources"), mutating)...)
}

func validateValidationActions(p *field.Path, actions []admissionregistrationv1.ValidationAction) field.ErrorList {
	var errs field.ErrorList
	seen := map[admissionregistrationv1.ValidationAction]bool{}
	for i, a := range actions {
		if a != admissionregistrationv1.Deny && a != admissionregistrationv1.Warn && a != admissionregistrationv1.Audit {
			errs = append(errs, field.NotSupported(p.Index(i), a, []string{"Audit", "Deny", "Warn"}))
		}
		if seen[a] {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen[a] = true
	}
	if seen[admissionregistrationv1.Deny] && seen[admissionregistrationv1.Warn] {
		errs = append(errs, field.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

// requiredLast are the errors of a binding's required fields that
// kube-apiserver v1.37 checks declaratively, and so reports after the
// others: no policyName, no validation action (noActions).
func requiredLast(p *field.Path, policy string, noActions bool) field.ErrorList {
	var errs field.ErrorList
	if policy == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	}
	if noActions {
		errs = append(errs, field.Required(p.Child("validationActions"), "")) // the declarative check says no more
	}
	return errs
}
