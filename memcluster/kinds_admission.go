package memcluster

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// The admissionregistration.k8s.io/v1 kinds: webhook configurations and
// admission policies with their bindings, stored with kube-apiserver's
// defaults and validation. They take effect through Config.Admission
// (the test bench's); without it they are stored and nothing calls them.
// Their CEL expressions are compiled by the admission, if it can
// (admit.ExpressionChecker), as kube-apiserver's validation does.

type admissionKind interface {
	*admissionregistrationv1.MutatingWebhookConfiguration | *admissionregistrationv1.ValidatingWebhookConfiguration |
		*admissionregistrationv1.ValidatingAdmissionPolicy | *admissionregistrationv1.ValidatingAdmissionPolicyBinding |
		*admissionregistrationv1.MutatingAdmissionPolicy | *admissionregistrationv1.MutatingAdmissionPolicyBinding
	Object
}

// admissionKindOf is a cluster-scoped kind of admissionregistration.k8s.io/v1
// whose generation follows spec(obj), defaulted by def and validated by
// validate, then by the cluster's admission's expression checker.
func admissionKindOf[T admissionKind](c *Cluster, kind, resource string, newObj func() T, newList func() runtime.Object,
	spec func(T) any, def func(T), validate func(T) field.ErrorList) Kind[T] {
	k := builtinKindOf(admissionregistrationv1.SchemeGroupVersion.WithKind(kind), resource, newObj, newList)
	k.ClusterScoped = true
	k.Categories = []string{"api-extensions"}
	k.Default = def
	k.Generation = func(obj T) any { return spec(obj) }
	k.Validate = func(obj, old T) field.ErrorList {
		errs := validate(obj)
		if ec, ok := c.cfg.Admission.(admit.ExpressionChecker); ok {
			var stored runtime.Object
			if !isNil(old) {
				stored = old
			}
			errs = append(errs, ec.CheckExpressions(obj, stored)...)
		}
		return errs
	}
	return k
}

func mutatingWebhookConfigurationKind(c *Cluster) Kind[*admissionregistrationv1.MutatingWebhookConfiguration] {
	type O = admissionregistrationv1.MutatingWebhookConfiguration
	return admissionKindOf(c, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		func(o *O) any { return o.Webhooks }, defaults.MutatingWebhookConfiguration,
		func(o *O) field.ErrorList {
			var errs field.ErrorList
			names := map[string]bool{}
			for i := range o.Webhooks {
				w := &o.Webhooks[i]
				p := field.NewPath("webhooks").Index(i)
				errs = append(errs, validateWebhook(p, w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds,
					w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.MatchConditions, w.AdmissionReviewVersions, names)...)
				if r := w.ReinvocationPolicy; r != nil && *r != admissionregistrationv1.NeverReinvocationPolicy && *r != admissionregistrationv1.IfNeededReinvocationPolicy {
					errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *r, []string{"IfNeeded", "Never"}))
				}
			}
			return errs
		})
}

func validatingWebhookConfigurationKind(c *Cluster) Kind[*admissionregistrationv1.ValidatingWebhookConfiguration] {
	type O = admissionregistrationv1.ValidatingWebhookConfiguration
	return admissionKindOf(c, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
		func() *O { return &O{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		func(o *O) any { return o.Webhooks }, defaults.ValidatingWebhookConfiguration,
		func(o *O) field.ErrorList {
			var errs field.ErrorList
			names := map[string]bool{}
			for i := range o.Webhooks {
				w := &o.Webhooks[i]
				errs = append(errs, validateWebhook(field.NewPath("webhooks").Index(i), w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects,
					w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.MatchConditions, w.AdmissionReviewVersions, names)...)
			}
			return errs
		})
}

// validateWebhook validates one webhook of a configuration; names are
// the names of the webhooks before it.
func validateWebhook(p *field.Path, name string, rules []admissionregistrationv1.RuleWithOperations,
	failure *admissionregistrationv1.FailurePolicyType, match *admissionregistrationv1.MatchPolicyType,
	sideEffects *admissionregistrationv1.SideEffectClass, timeout *int32, namespaces, objects *metav1.LabelSelector,
	cc admissionregistrationv1.WebhookClientConfig, conditions []admissionregistrationv1.MatchCondition, reviews []string,
	names map[string]bool) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), name)
	for i := range rules {
		errs = append(errs, validateRuleWithOperations(&rules[i], p.Child("rules").Index(i), false)...)
	}
	errs = append(errs, validateFailureAndMatch(p, failure, match)...)
	switch {
	case sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	case *sideEffects != admissionregistrationv1.SideEffectClassNone && *sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun:
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *sideEffects, []string{"None", "NoneOnDryRun"}))
	}
	if timeout != nil && (*timeout > 30 || *timeout < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	if namespaces != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(namespaces, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if objects != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(objects, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateClientConfig(p.Child("clientConfig"), cc)...)
	errs = append(errs, validateMatchConditions(p.Child("matchConditions"), conditions)...)
	errs = append(errs, validateReviewVersions(p.Child("admissionReviewVersions"), reviews)...)
	if name != "" {
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
	}
	return errs
}

func validateFailureAndMatch(p *field.Path, failure *admissionregistrationv1.FailurePolicyType, match *admissionregistrationv1.MatchPolicyType) field.ErrorList {
	var errs field.ErrorList
	if failure != nil && *failure != admissionregistrationv1.Fail && *failure != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *failure, []string{"Fail", "Ignore"}))
	}
	if match != nil && *match != admissionregistrationv1.Exact && *match != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *match, []string{"Equivalent", "Exact"}))
	}
	return errs
}

func validateClientConfig(p *field.Path, cc admissionregistrationv1.WebhookClientConfig) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case cc.URL != nil:
		const form = "; desired format: https://host[/path]"
		up := p.Child("url")
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return field.ErrorList{field.Required(up, "url must be a valid URL: "+err.Error()+form)}
		}
		if u.Scheme != "https" {
			errs = append(errs, field.Invalid(up, u.Scheme, "'https' is the only allowed URL scheme"+form))
		}
		if u.Host == "" {
			errs = append(errs, field.Invalid(up, u.Host, "host must be specified"+form))
		}
		if u.User != nil {
			errs = append(errs, field.Invalid(up, u.User.String(), "user information is not permitted in the URL"))
		}
		if u.Fragment != "" {
			errs = append(errs, field.Invalid(up, u.Fragment, "fragments are not permitted in the URL"))
		}
		if u.RawQuery != "" {
			errs = append(errs, field.Invalid(up, u.RawQuery, "query parameters are not permitted in the URL"))
		}
		return errs
	}
	s, sp := cc.Service, p.Child("service")
	// kube-apiserver v1.37 passes the service's namespace and name to its
	// check in each other's place: a missing namespace is reported as the
	// name, and the other way round.
	if s.Namespace == "" {
		errs = append(errs, field.Required(sp.Child("name"), ""))
	}
	if s.Name == "" {
		errs = append(errs, field.Required(sp.Child("namespace"), ""))
	}
	if port := s.Port; port != nil {
		if msgs := utilvalidation.IsValidPortNum(int(*port)); msgs != nil {
			errs = append(errs, field.Invalid(sp.Child("port"), *port, "port is not valid: "+strings.Join(msgs, ", ")))
		}
	}
	if s.Path == nil || *s.Path == "/" || *s.Path == "" {
		return errs
	}
	urlPath := *s.Path
	if urlPath == "//" {
		return append(errs, field.Invalid(sp.Child("path"), urlPath, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(urlPath, "/") {
		errs = append(errs, field.Invalid(sp.Child("path"), urlPath, "must start with a '/'"))
	}
	for i, step := range strings.Split(strings.TrimSuffix(urlPath[1:], "/"), "/") {
		if step == "" {
			errs = append(errs, field.Invalid(sp.Child("path"), urlPath, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(step) {
			errs = append(errs, field.Invalid(sp.Child("path"), urlPath, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

func validateReviewVersions(p *field.Path, versions []string) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of v1, v1beta1")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		accepted = accepted || v == "v1" || v == "v1beta1"
	}
	if !accepted {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

func validateMatchConditions(p *field.Path, conditions []admissionregistrationv1.MatchCondition) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > 64 {
		errs = append(errs, field.TooMany(p, len(conditions), 64))
	}
	names := map[string]bool{}
	for i, mc := range conditions {
		cp := p.Index(i)
		if strings.TrimSpace(mc.Expression) == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), mc.Name, msg))
			}
			if names[mc.Name] {
				errs = append(errs, field.Duplicate(cp.Child("name"), mc.Name))
			}
			names[mc.Name] = true
		}
	}
	return errs
}

var supportedOperations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}

// validateRuleWithOperations validates a rule; a mutating policy's may
// not name DELETE.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path, mutatingPolicy bool) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	supported := supportedOperations
	if mutatingPolicy {
		supported = []string{"*", "CONNECT", "CREATE", "UPDATE"}
	}
	for i, op := range r.Operations {
		if !slices.Contains(supported, string(op)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, supported))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateRuleResources(r.Resources, p.Child("resources"))...)
	if s := r.Scope; s != nil && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope && *s != admissionregistrationv1.AllScopes {
		errs = append(errs, field.NotSupported(p.Child("scope"), *s, []string{"*", "Cluster", "Namespaced"}))
	}
	return errs
}

// validateRuleResources validates the resources of a rule: "x", "x/y",
// "*", "x/*", "*/y", "*/*", without overlaps kube-apiserver refuses.
func validateRuleResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	wildSub, wildRes := map[string]bool{}, map[string]bool{}
	double, single, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		double = double || rs == "*/*"
		single = single || rs == "*"
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*"
			continue
		}
		if wildSub[res] {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes[sub] {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		wildSub[res] = wildSub[res] || sub == "*"
		wildRes[sub] = wildRes[sub] || res == "*"
	}
	if len(resources) > 1 && double {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if single && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateMatchResources validates a policy's matchConstraints or a
// binding's matchResources (set: the defaults filled it in).
func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path, mutatingPolicy bool) field.ErrorList {
	if m == nil {
		return nil
	}
	errs := validateFailureAndMatch(p, nil, m.MatchPolicy)
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	for _, part := range []struct {
		name  string
		rules []admissionregistrationv1.NamedRuleWithOperations
	}{{"resourceRules", m.ResourceRules}, {"excludeResourceRules", m.ExcludeResourceRules}} {
		name, rules := part.name, part.rules
		for i := range rules {
			rp := p.Child(name).Index(i)
			seen := map[string]bool{}
			for j, rn := range rules[i].ResourceNames {
				for _, msg := range path.IsValidPathSegmentName(rn) {
					errs = append(errs, field.Invalid(rp.Child("resourceNames").Index(j), rn, msg))
				}
				if seen[rn] {
					errs = append(errs, field.Duplicate(rp.Child("resourceNames").Index(j), rn))
				}
				seen[rn] = true
			}
			errs = append(errs, validateRuleWithOperations(&rules[i].RuleWithOperations, rp, mutatingPolicy)...)
		}
	}
	return errs
}
