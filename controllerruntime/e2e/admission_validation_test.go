//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestAdmissionConfigurationsSideBySide writes webhook configurations
// and policies, valid and not, to kube-apiserver v1.37.1 and to memcluster
// with the bench's admission, and compares the answers: the defaults of
// what is stored, the field errors of what is refused (CEL that does not
// compile included).
func TestAdmissionConfigurationsSideBySide(t *testing.T) {
	url := "https://127.0.0.1:9443/validate"
	none := admissionregistrationv1.SideEffectClassNone
	some := admissionregistrationv1.SideEffectClassSome
	rule := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}
	webhook := func(name string, edit func(*admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
		w := admissionregistrationv1.ValidatingWebhook{Name: "check.e2e.ctrlkit.dev", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, Rules: []admissionregistrationv1.RuleWithOperations{rule}}
		if edit != nil {
			edit(&w)
		}
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
	}
	policy := func(name string, edit func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule}}},
				Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
			}}
		if edit != nil {
			edit(&p.Spec)
		}
		return p
	}
	type step struct {
		name    string
		webhook *admissionregistrationv1.ValidatingWebhookConfiguration
		policy  *admissionregistrationv1.ValidatingAdmissionPolicy
		binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	}
	run := time.Now().UnixNano() % 1000000
	steps := func() []step {
		n := func(s string) string { return fmt.Sprintf("%s-%d", s, run) }
		return []step{
			{name: "a valid webhook configuration, defaulted", webhook: webhook(n("valid"), nil)},
			{name: "no sideEffects", webhook: webhook(n("no-side-effects"), func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil })},
			{name: "sideEffects Some", webhook: webhook(n("side-effects"), func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = &some })},
			{name: "an http url, a query", webhook: webhook(n("http"), func(w *admissionregistrationv1.ValidatingWebhook) {
				u := "http://127.0.0.1/x?y=1"
				w.ClientConfig.URL = &u
			})},
			{name: "url and service", webhook: webhook(n("both"), func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hooks"}
			})},
			{name: "a service with a bad path and port", webhook: webhook(n("svc"), func(w *admissionregistrationv1.ValidatingWebhook) {
				p, port := "no-slash//x", int32(70000)
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "hooks", Path: &p, Port: &port}}
			})},
			{name: "a name that is not qualified, a timeout of 40 s", webhook: webhook(n("name"), func(w *admissionregistrationv1.ValidatingWebhook) {
				w.Name, w.TimeoutSeconds = "check", ptr[int32](40)
			})},
			{name: "rules: no operations, * with others", webhook: webhook(n("rules"), func(w *admissionregistrationv1.ValidatingWebhook) {
				w.Rules = []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{"*", "apps"},
					APIVersions: []string{"v1"}, Resources: []string{"*/*", "pods"}}}}
			})},
			{name: "no admissionReviewVersions", webhook: webhook(n("reviews"), func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil })},
			{name: "a match condition that does not compile", webhook: webhook(n("cel"), func(w *admissionregistrationv1.ValidatingWebhook) {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "typo", Expression: "object.metadata.name =="}}
			})},
			{name: "a valid policy, defaulted", policy: policy(n("valid"), nil)},
			{name: "a policy without validations or matchConstraints", policy: policy(n("empty"), func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.Validations, s.MatchConstraints = nil, nil
			})},
			{name: "a policy using params it does not declare", policy: policy(n("params"), func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.Validations = []admissionregistrationv1.Validation{{Expression: "params.x == 1"}}
			})},
			{name: "a binding without validation actions", binding: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: n("binding-none")}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}}},
			{name: "a binding with Deny and Warn, no policy name", binding: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: n("binding")},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn},
					ParamRef:          &admissionregistrationv1.ParamRef{Name: "x", Selector: &metav1.LabelSelector{}},
				}}},
		}
	}
	var log stepLog
	for _, s := range []side{{"kube-apiserver", realAPIServer(t)}, {"memcluster", memAdmittedAPIServer(t)}} {
		record := log.side(s.name)
		cs, err := kubernetes.NewForConfig(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ar := cs.AdmissionregistrationV1()
		ctx := t.Context()
		for _, st := range steps() {
			var obj any
			switch {
			case st.webhook != nil:
				obj, err = ar.ValidatingWebhookConfigurations().Create(ctx, st.webhook, metav1.CreateOptions{})
				if err == nil {
					_ = ar.ValidatingWebhookConfigurations().Delete(ctx, st.webhook.Name, metav1.DeleteOptions{}) // the shared server's other tests
				}
			case st.policy != nil:
				obj, err = ar.ValidatingAdmissionPolicies().Create(ctx, st.policy, metav1.CreateOptions{})
				if err == nil {
					_ = ar.ValidatingAdmissionPolicies().Delete(ctx, st.policy.Name, metav1.DeleteOptions{})
				}
			default:
				obj, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, st.binding, metav1.CreateOptions{})
			}
			record(st.name, configurationOutcome(obj, err))
		}
	}
	log.compare(t, "admission configurations written: kube-apiserver v1.37.1 and memcluster")
}

// configurationOutcome is the answer to a write: the error, or what was
// stored but for the server's own metadata.
func configurationOutcome(obj any, err error) crOutcome {
	if err != nil {
		o := crOutcome{Message: err.Error()}
		if s, ok := err.(apierrors.APIStatus); ok {
			o.Code, o.Reason = s.Status().Code, string(s.Status().Reason)
			if d := s.Status().Details; d != nil {
				for _, c := range d.Causes {
					o.Causes = append(o.Causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
				}
			}
		}
		return o
	}
	b, _ := json.Marshal(obj)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	md, _ := m["metadata"].(map[string]any)
	m["metadata"] = map[string]any{"generation": md["generation"]}
	return crOutcome{Object: m}
}
