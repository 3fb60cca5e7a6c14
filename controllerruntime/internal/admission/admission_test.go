package admission_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/admission"
	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// newCluster returns a memcluster with the built-in kinds whose
// admission is this package's, and the namespaces "web" (labelled
// team=web) and "other".
func newCluster(t testing.TB) *memcluster.Cluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var api http.Handler
	adm, err := admission.New(admission.Config{Scheme: scheme,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Stop)
	c := memcluster.New(memcluster.Config{Admission: adm, OnWrite: adm.Wrote, RequireNamespaces: true})
	memcluster.AddBuiltinKinds(c)
	api = memcluster.NewHandler(c)
	for name, labels := range map[string]map[string]string{"web": {"team": "web"}, "other": nil} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if _, err := c.Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// hooks is a webhook server over HTTPS: each path answers with its
// function, and counts its calls.
type hooks struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newHooks(t testing.TB, answers map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *hooks {
	t.Helper()
	h := &hooks{calls: map[string]int{}}
	mux := http.NewServeMux()
	for path, answer := range answers {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			h.mu.Lock()
			h.calls[path]++
			h.mu.Unlock()
			resp := answer(review.Request)
			resp.UID = review.Request.UID
			review.Response, review.Request = resp, nil
			_ = json.NewEncoder(w).Encode(&review) // the client went away: nothing to tell it
		})
	}
	h.srv = httptest.NewTLSServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) called(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[path]
}

// client is the clientConfig of the webhook at path.
func (h *hooks) client(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(h.srv.URL + path), CABundle: ca}
}

func allow(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// patch answers with a JSON patch.
func patch(ops string) func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(ops), PatchType: &pt}
	}
}

// addLabel answers with a patch that sets the label key to the value
// value returns for the pod.
func addLabel(key string, value func(*corev1.Pod) string) func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var p corev1.Pod
		if err := json.Unmarshal(r.Object.Raw, &p); err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error(), Code: 400}}
		}
		v, _ := json.Marshal(value(&p))
		if p.Labels == nil {
			return patch(`[{"op":"add","path":"/metadata/labels","value":{"` + key + `":` + string(v) + `}}]`)(r)
		}
		return patch(`[{"op":"add","path":"/metadata/labels/` + key + `","value":` + string(v) + `}]`)(r)
	}
}

var podRule = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}}

func mutating(name string, cc admissionregistrationv1.WebhookClientConfig, edit func(*admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	w := admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: cc, Rules: podRule,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	if edit != nil {
		edit(&w)
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{w}}
}

func validating(name string, cc admissionregistrationv1.WebhookClientConfig, edit func(*admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	w := admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: podRule,
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	if edit != nil {
		edit(&w)
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
}

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
}

// TestWebhooks runs each case on a new cluster: its configurations, then
// a pod created; it compares the error (or the stored labels), the
// warnings and the calls of each webhook.
func TestWebhooks(t *testing.T) {
	server := newHooks(t, map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{
		"/label":   addLabel("mutated", func(*corev1.Pod) string { return "yes" }),
		"/default": patch(`[{"op":"add","path":"/spec/priorityClassName","value":"low"}]`),
		"/deny": func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "pods need an owner", Code: 403}}
		},
		"/warn": func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"image has no tag"}}
		},
		// Sets label b to label a's value (none, the first time).
		"/b": func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var p corev1.Pod
			_ = json.Unmarshal(r.Object.Raw, &p)
			if p.Labels["b"] != "" {
				return allow(r)
			}
			return addLabel("b", func(p *corev1.Pod) string { return p.Labels["a"] })(r)
		},
		"/a": addLabel("a", func(*corev1.Pod) string { return "1" }),
	})
	down := newHooks(t, nil)
	down.srv.Close()
	downURL := down.srv.URL

	teamWeb := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}
	type result struct {
		Err      string
		Labels   map[string]string
		Priority string
		Warnings []string
		Calls    map[string]int
	}
	for _, tc := range []struct {
		name    string
		configs []client.Object
		ns      string
		labels  map[string]string
		want    result
	}{{
		name: "mutating adds a label and a default",
		configs: []client.Object{mutating("label.example.com", server.client("/label"), nil),
			mutating("default.example.com", server.client("/default"), nil)},
		want: result{Labels: map[string]string{"mutated": "yes"}, Priority: "low", Calls: map[string]int{"/label": 1, "/default": 1}},
	}, {
		name:    "validating denies with a reason",
		configs: []client.Object{validating("deny.example.com", server.client("/deny"), nil)},
		want:    result{Err: `admission webhook "deny.example.com" denied the request: pods need an owner`, Calls: map[string]int{"/deny": 1}},
	}, {
		name:    "failurePolicy Fail with the server down",
		configs: []client.Object{validating("down.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(downURL + "/x")}, nil)},
		want: result{Err: `Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "` + downURL +
			`/x?timeout=10s": dial tcp ` + strings.TrimPrefix(downURL, "https://") + `: connect: connection refused`},
	}, {
		name: "failurePolicy Ignore with the server down",
		configs: []client.Object{validating("down.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(downURL + "/x")},
			func(w *admissionregistrationv1.ValidatingWebhook) {
				w.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			})},
		want: result{},
	}, {
		name: "namespaceSelector misses",
		configs: []client.Object{validating("deny.example.com", server.client("/deny"),
			func(w *admissionregistrationv1.ValidatingWebhook) { w.NamespaceSelector = teamWeb })},
		ns:   "other",
		want: result{},
	}, {
		name: "namespaceSelector matches",
		configs: []client.Object{validating("deny.example.com", server.client("/deny"),
			func(w *admissionregistrationv1.ValidatingWebhook) { w.NamespaceSelector = teamWeb })},
		want: result{Err: `admission webhook "deny.example.com" denied the request: pods need an owner`, Calls: map[string]int{"/deny": 1}},
	}, {
		name: "objectSelector misses",
		configs: []client.Object{validating("deny.example.com", server.client("/deny"),
			func(w *admissionregistrationv1.ValidatingWebhook) { w.ObjectSelector = teamWeb })},
		want: result{},
	}, {
		name: "matchConditions exclude",
		configs: []client.Object{validating("deny.example.com", server.client("/deny"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt", Expression: `!has(object.metadata.labels) || !("exempt" in object.metadata.labels)`}}
		})},
		labels: map[string]string{"exempt": "true"},
		want:   result{Labels: map[string]string{"exempt": "true"}},
	}, {
		name:    "warnings",
		configs: []client.Object{validating("warn.example.com", server.client("/warn"), nil)},
		want:    result{Warnings: []string{"image has no tag"}, Calls: map[string]int{"/warn": 1}},
	}, {
		// a (IfNeeded) runs first, then b, whose change reinvokes a; b, not
		// IfNeeded, is not called again.
		name: "reinvocation",
		configs: []client.Object{
			mutating("a.example.com", server.client("/a"), func(w *admissionregistrationv1.MutatingWebhook) {
				w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
			}),
			mutating("b.example.com", server.client("/b"), nil),
		},
		want: result{Labels: map[string]string{"a": "1", "b": "1"}, Calls: map[string]int{"/a": 2, "/b": 1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			ctx := t.Context()
			for _, cfg := range tc.configs {
				create(t, c, cfg)
			}
			before := map[string]int{}
			for _, p := range []string{"/label", "/default", "/deny", "/warn", "/a", "/b"} {
				before[p] = server.called(p)
			}
			ns := tc.ns
			if ns == "" {
				ns = "web"
			}
			wctx, warnings := admit.WithWarnings(ctx)
			var got result
			out, err := c.Pods(ns).Create(wctx, newPod(ns, "p", tc.labels), metav1.CreateOptions{})
			if err != nil {
				got.Err = err.Error()
			} else {
				got.Labels, got.Priority = out.Labels, out.Spec.PriorityClassName
			}
			got.Warnings = warnings.List()
			for p, n := range before {
				if d := server.called(p) - n; d > 0 {
					if got.Calls == nil {
						got.Calls = map[string]int{}
					}
					got.Calls[p] = d
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func create(t testing.TB, c *memcluster.Cluster, obj client.Object) {
	t.Helper()
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	cl, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T: %v", obj, err)
	}
}

// TestPolicy binds a ValidatingAdmissionPolicy with a parameter: the
// denial names both, with the message of the failed validation.
func TestPolicy(t *testing.T) {
	defer generic.SetPolicyRefreshIntervalForTests(10 * time.Millisecond)()
	c := newCluster(t)
	ctx := t.Context()
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "limits"}, Data: map[string]string{"maxContainers": "1"}})
	create(t, c, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "max-containers"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: podRule[0]}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "size(object.spec.containers) <= int(params.data.maxContainers)",
				Message:    "too many containers",
			}},
		},
	})
	create(t, c, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "max-containers-web"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "max-containers",
			ParamRef: &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "web",
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	})
	two := newPod("web", "two", nil)
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
	want := `pods "two" is forbidden: ValidatingAdmissionPolicy 'max-containers' with binding 'max-containers-web' denied request: too many containers`
	// The policy's plugin compiles policies anew periodically (every
	// second in kube-apiserver; 10 ms here): create until it takes effect.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Pods("web").Create(ctx, two.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			if got := err.Error(); got != want {
				t.Fatalf("create:\n got %s\nwant %s", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy never took effect")
		}
		if err := c.Pods("web").Delete(ctx, "two", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Pods("web").Create(ctx, newPod("web", "one", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod the policy allows: %v", err)
	}
}

// TestMutatingPolicyNeedsOpenAPI binds a MutatingAdmissionPolicy: its
// plugin types the object of every mutation (JSONPatch too) with the
// kind's OpenAPI v3 schema, which memcluster does not serve, so a request
// the policy matches fails, as its failurePolicy (Fail) says
// (docs/admission.md lists it under what is not modelled).
func TestMutatingPolicyNeedsOpenAPI(t *testing.T) {
	defer generic.SetPolicyRefreshIntervalForTests(10 * time.Millisecond)()
	c := newCluster(t)
	ctx := t.Context()
	create(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: podRule[0]}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/labels", value: {"policy": "json"}}]`}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	})
	create(t, c, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label"},
	})
	want := `Resource kind /v1, Kind=Pod not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.`
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		_, err := c.Pods("web").Create(ctx, newPod("web", fmt.Sprint("p", i), nil), metav1.CreateOptions{})
		if err != nil {
			if got := err.Error(); got != want {
				t.Fatalf("create:\n got %s\nwant %s", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy never took effect")
		}
		time.Sleep(10 * time.Millisecond) // the plugin compiles policies anew every 10 ms here
	}
}

// TestCheckExpressions writes configurations whose CEL does not compile:
// refused with kube-apiserver's field errors.
func TestCheckExpressions(t *testing.T) {
	c := newCluster(t)
	server := newHooks(t, nil)
	err := createErr(t, c, validating("bad.example.com", server.client("/x"), func(w *admissionregistrationv1.ValidatingWebhook) {
		w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "typo", Expression: "object.metadata.name =="}}
	}))
	want := `ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad.example.com" is invalid: webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}
 | object.metadata.name ==
 | .......................^`
	if err == nil || err.Error() != want {
		t.Errorf("create:\n got %v\nwant %s", err, want)
	}
	err = createErr(t, c, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule[0]}}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "params.x == 1"}},
		},
	})
	want = `ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad" is invalid: spec.validations[0].expression: Invalid value: "params.x == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')
 | params.x == 1
 | ^`
	if err == nil || err.Error() != want {
		t.Errorf("create:\n got %v\nwant %s", err, want)
	}
}

func createErr(t testing.TB, c *memcluster.Cluster, obj client.Object) error {
	t.Helper()
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	cl, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl.Create(t.Context(), obj)
}
