package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MutatingWebhookConfiguration sets what kube-apiserver v1.37 sets on an
// admissionregistration.k8s.io/v1 MutatingWebhookConfiguration: for each
// webhook, failurePolicy Fail, matchPolicy Equivalent, empty (match-all)
// namespace and object selectors, timeoutSeconds 10, reinvocationPolicy
// Never, scope "*" for its rules and port 443 for its service.
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	if c == nil {
		return
	}
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = ptr(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

// ValidatingWebhookConfiguration sets what kube-apiserver v1.37 sets on an
// admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration: those of
// [MutatingWebhookConfiguration] but the reinvocation policy.
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	if c == nil {
		return
	}
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
	}
}

// webhook sets the defaults both kinds of webhook have.
func webhook(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	namespaces, objects **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations,
	client *admissionregistrationv1.WebhookClientConfig) {
	if *failure == nil {
		*failure = ptr(admissionregistrationv1.Fail)
	}
	if *match == nil {
		*match = ptr(admissionregistrationv1.Equivalent)
	}
	if *namespaces == nil {
		*namespaces = &metav1.LabelSelector{}
	}
	if *objects == nil {
		*objects = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr[int32](10)
	}
	for i := range rules {
		rule(&rules[i].Rule)
	}
	if s := client.Service; s != nil && s.Port == nil {
		s.Port = ptr[int32](443)
	}
}

func rule(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		r.Scope = ptr(admissionregistrationv1.AllScopes)
	}
}

// ValidatingAdmissionPolicy sets what kube-apiserver v1.37 sets on an
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy:
// failurePolicy Fail, and the defaults of its matchConstraints (see
// [ValidatingAdmissionPolicyBinding]).
func ValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p == nil {
		return
	}
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr(admissionregistrationv1.Fail)
	}
	matchResources(p.Spec.MatchConstraints)
}

// ValidatingAdmissionPolicyBinding sets what kube-apiserver v1.37 sets on
// an admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding: in
// its matchResources, if set, matchPolicy Equivalent, empty (match-all)
// namespace and object selectors, and scope "*" for its rules.
func ValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b == nil {
		return
	}
	matchResources(b.Spec.MatchResources)
}

// MutatingAdmissionPolicy sets what kube-apiserver v1.37 sets on an
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: those of
// [ValidatingAdmissionPolicy].
func MutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p == nil {
		return
	}
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr(admissionregistrationv1.Fail)
	}
	matchResources(p.Spec.MatchConstraints)
}

// MutatingAdmissionPolicyBinding sets what kube-apiserver v1.37 sets on
// an admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding: those
// of [ValidatingAdmissionPolicyBinding].
func MutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	if b == nil {
		return
	}
	matchResources(b.Spec.MatchResources)
}

func matchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		rule(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		rule(&m.ExcludeResourceRules[i].Rule)
	}
}
