//go:build e2e

package e2e

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// sideAnswers are the webhooks of the side-by-side tests, by path.
func sideAnswers() map[string]answer {
	allowed := func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	return map[string]answer{
		"/marker": allowed,
		// Adds a label and a default (a data key the client did not set).
		"/mutate": func(_ *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			return jsonPatch(cm, func(c *corev1.ConfigMap) {
				c.Labels["mutated"] = "yes"
				c.Data["default"] = "by the webhook"
			})
		},
		"/deny": func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
				Message: "configmaps need an owner label"}}
		},
		"/warn": func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"configmap has no owner label", "second warning"}}
		},
		// a sets a=1; b copies a into b. With a IfNeeded and b after it, a is
		// called again once b has changed the object.
		"/a": func(_ *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			return jsonPatch(cm, func(c *corev1.ConfigMap) { c.Labels["a"] = "1" })
		},
		"/b": func(_ *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			return jsonPatch(cm, func(c *corev1.ConfigMap) { c.Labels["b"] = "copy-of-" + c.Labels["a"] })
		},
	}
}

// jsonPatch answers with the patch that makes cm what edit makes of it
// (replacing the labels and data whole, which JSON patches can say
// whatever cm has).
func jsonPatch(cm *corev1.ConfigMap, edit func(*corev1.ConfigMap)) *admissionv1.AdmissionResponse {
	c := cm.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.Data == nil {
		c.Data = map[string]string{}
	}
	edit(c)
	labels, _ := json.Marshal(c.Labels)
	data, _ := json.Marshal(c.Data)
	patch := `[{"op":"add","path":"/metadata/labels","value":` + string(labels) + `},{"op":"add","path":"/data","value":` + string(data) + `}]`
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
}

// sideCase is a case of TestAdmissionSideBySide: the configurations it
// installs (named as the case's, scoped to its namespaces), and the
// labels of the ConfigMap it creates.
type sideCase struct {
	name    string
	configs func(c *admissionCase) []runtime.Object
	labels  map[string]string
	policy  bool // a policy: wait until the object is denied
}

func admissionCases(hooks *sideHooks, downURL string) []sideCase {
	mutating := func(name string, c *admissionCase, edit func(*admissionregistrationv1.MutatingWebhook), paths ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, p := range paths {
			w := asMutating(sideWebhook(p[1:]+".e2e.ctrlkit.dev", hooks.client(p), c.selector))
			if edit != nil {
				edit(&w)
			}
			cfg.Webhooks = append(cfg.Webhooks, w)
		}
		return cfg
	}
	validating := func(name string, c *admissionCase, edit func(*admissionregistrationv1.ValidatingWebhook), paths ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, p := range paths {
			w := sideWebhook(p[1:]+".e2e.ctrlkit.dev", hooks.client(p), c.selector)
			if edit != nil {
				edit(&w)
			}
			cfg.Webhooks = append(cfg.Webhooks, w)
		}
		return cfg
	}
	down := func(policy admissionregistrationv1.FailurePolicyType) func(*admissionregistrationv1.ValidatingWebhook) {
		return func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &downURL, CABundle: w.ClientConfig.CABundle}
			w.FailurePolicy = &policy
		}
	}
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	return []sideCase{{
		name: "mutating webhook adds a label and a default",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{mutating("mutate", c, nil, "/mutate")}
		},
	}, {
		name:    "validating webhook denies with a reason",
		configs: func(c *admissionCase) []runtime.Object { return []runtime.Object{validating("deny", c, nil, "/deny")} },
	}, {
		name: "failurePolicy Fail, webhook down",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("down-fail", c, down(admissionregistrationv1.Fail), "/down")}
		},
	}, {
		name: "failurePolicy Ignore, webhook down",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("down-ignore", c, down(admissionregistrationv1.Ignore), "/down")}
		},
	}, {
		name: "namespaceSelector misses",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("ns-miss", c, func(w *admissionregistrationv1.ValidatingWebhook) {
				w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"e2e.ctrlkit.dev/admission": c.ns + "-other"}}
			}, "/deny")}
		},
	}, {
		name: "objectSelector misses",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("obj-miss", c, func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ObjectSelector.MatchLabels = map[string]string{"tier": "gold"}
			}, "/deny")}
		},
		labels: map[string]string{"tier": "silver"},
	}, {
		name: "matchConditions exclude",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("conditions", c, func(w *admissionregistrationv1.ValidatingWebhook) {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt",
					Expression: `!has(object.metadata.labels) || !('exempt' in object.metadata.labels)`}}
			}, "/deny")}
		},
		labels: map[string]string{"exempt": "yes"},
	}, {
		name: "matchConditions include",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{validating("conditions", c, func(w *admissionregistrationv1.ValidatingWebhook) {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt",
					Expression: `!has(object.metadata.labels) || !('exempt' in object.metadata.labels)`}}
			}, "/deny")}
		},
		labels: map[string]string{"other": "yes"},
	}, {
		name:    "warnings",
		configs: func(c *admissionCase) []runtime.Object { return []runtime.Object{validating("warn", c, nil, "/warn")} },
	}, {
		name: "reinvocation (IfNeeded, then a webhook that changes the object)",
		configs: func(c *admissionCase) []runtime.Object {
			return []runtime.Object{mutating("reinvoke", c, func(w *admissionregistrationv1.MutatingWebhook) {
				if w.Name == "a.e2e.ctrlkit.dev" {
					w.ReinvocationPolicy = &ifNeeded
				}
			}, "/a", "/b")}
		},
	}, {
		name:   "ValidatingAdmissionPolicy with a binding and a param",
		policy: true,
		configs: func(c *admissionCase) []runtime.Object {
			deny := admissionregistrationv1.DenyAction
			return []runtime.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"forbidden": "large"}},
				&admissionregistrationv1.ValidatingAdmissionPolicy{
					ObjectMeta: metav1.ObjectMeta{Name: "sizes"},
					Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
						ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
						MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
							RuleWithOperations: sideWebhook("", admissionregistrationv1.WebhookClientConfig{}, nil).Rules[0]}}},
						Validations: []admissionregistrationv1.Validation{{
							Expression:        `!has(object.metadata.labels) || !('size' in object.metadata.labels) || object.metadata.labels['size'] != params.data.forbidden`,
							MessageExpression: `'size ' + params.data.forbidden + ' is forbidden here'`,
						}},
					},
				},
				&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "sizes"},
					Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
						PolicyName:        "sizes",
						ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", Namespace: c.ns, ParameterNotFoundAction: &deny},
						MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: c.selector},
						ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
					},
				},
			}
		},
		labels: map[string]string{"size": "large"},
	}}
}
