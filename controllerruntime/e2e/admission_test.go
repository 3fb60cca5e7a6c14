//go:build e2e

package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/controllerruntime/crd"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/admission"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/testsupport"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// TestAdmissionSideBySide configures the same webhooks and policies on
// kube-apiserver v1.37.1 and on memcluster with the bench's admission,
// creates the same ConfigMap under each, and compares the answers: the
// error (message, code, reason), the object stored, the warnings, and how
// often each webhook was called.
//
// The real API server is shared by the package's tests: every
// configuration applies only to the namespaces of its case (a
// namespaceSelector on a label of the case's own), and a configuration is
// used once it took effect, which a marker webhook in it tells (a
// configuration takes effect whole, a moment after it is written on
// kube-apiserver; policies within a second).
func TestAdmissionSideBySide(t *testing.T) {
	hooks := newSideHooks(t)
	down := httptest.NewTLSServer(http.NotFoundHandler())
	downURL := down.URL + "/x"
	down.Close()
	var log stepLog
	run := time.Now().UnixNano() % 1000000 // namespaces of this run: the same on both sides
	for _, s := range []side{{"kube-apiserver", realAPIServer(t)}, {"memcluster", memAdmittedAPIServer(t)}} {
		record := log.side(s.name)
		warnings := &sideWarnings{}
		cfg := rest.CopyConfig(s.cfg)
		cfg.WarningHandler = warnings
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i, tc := range admissionCases(hooks, downURL) {
			c := newAdmissionCase(t, cs, hooks, fmt.Sprintf("adm-%d-%d", i, run))
			for _, obj := range tc.configs(c) {
				c.install(obj)
			}
			c.waitEffective(tc.policy)
			warnings.take()
			out := c.create(tc.labels)
			if w := warnings.take(); len(w) > 0 {
				out.Causes = w
			}
			if calls := hooks.callsIn(c.ns); len(calls) > 0 {
				out.Object["calls"] = calls
			}
			record(tc.name, out)
			c.cleanup()
		}
		t.Logf("%s: the cases took %v", s.name, time.Since(start).Round(time.Millisecond))
	}
	log.compare(t, "admission webhooks and policies: kube-apiserver v1.37.1 and memcluster")
}

// memAdmittedAPIServer is memAPIServer with the bench's admission, as
// controllerruntime/clustertest wires it.
func memAdmittedAPIServer(t *testing.T) *rest.Config {
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
	builtinTypes := memcluster.LazyTypeConverter(func() managedfields.TypeConverter { return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme) })
	c := memcluster.New(memcluster.Config{Seed: 1, RequireNamespaces: true, Admission: adm, OnWrite: adm.Wrote,
		TypeConverter: memcluster.TypeConverterChain(builtinTypes, managedfields.NewDeducedTypeConverter())})
	if _, err := crd.Bench(t.Context(), c, nil, nil); err != nil {
		t.Fatal(err)
	}
	memcluster.AddBuiltinKinds(c)
	api = memcluster.NewHandler(c)
	return testsupport.MemclusterConfig(api)
}

// admissionCase is one case on one side: its namespace (labelled with
// its own selector value) and what it installed.
type admissionCase struct {
	t         *testing.T
	cs        *kubernetes.Clientset
	hooks     *sideHooks
	ns        string
	selector  *metav1.LabelSelector // the case's namespaces
	installed []runtime.Object
	markers   []string
}

func newAdmissionCase(t *testing.T, cs *kubernetes.Clientset, hooks *sideHooks, ns string) *admissionCase {
	t.Helper()
	c := &admissionCase{t: t, cs: cs, hooks: hooks, ns: ns,
		selector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e.ctrlkit.dev/admission": ns}}}
	for _, name := range []string{ns, ns + "-other"} {
		labels := map[string]string{"e2e.ctrlkit.dev/admission": ns}
		if name != ns {
			labels = nil // outside the case's selector
		}
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

const markerLabel = "e2e.ctrlkit.dev/marker"

// notMarker selects the objects that are not markers.
var notMarker = metav1.LabelSelectorRequirement{Key: markerLabel, Operator: metav1.LabelSelectorOpDoesNotExist}

// install creates a configuration: a webhook configuration gets a marker
// webhook first, with which waitEffective learns it is in use.
func (c *admissionCase) install(obj runtime.Object) {
	t, ctx := c.t, c.t.Context()
	ar := c.cs.AdmissionregistrationV1()
	var err error
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		o.Name += "-" + c.ns
		o.Webhooks = append([]admissionregistrationv1.MutatingWebhook{asMutating(c.markerWebhook(o.Name))}, o.Webhooks...)
		c.markers = append(c.markers, o.Name)
		_, err = ar.MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		o.Name += "-" + c.ns
		o.Webhooks = append([]admissionregistrationv1.ValidatingWebhook{c.markerWebhook(o.Name)}, o.Webhooks...)
		c.markers = append(c.markers, o.Name)
		_, err = ar.ValidatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		o.Name += "-" + c.ns
		_, err = ar.ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		o.Name += "-" + c.ns
		o.Spec.PolicyName += "-" + c.ns
		_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		_, err = c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, o, metav1.CreateOptions{})
	default:
		t.Fatalf("install %T", obj)
	}
	if err != nil {
		t.Fatalf("install %T: %v", obj, err)
	}
	c.installed = append(c.installed, obj)
}

// markerWebhook is a webhook of the configuration name that the marker
// ConfigMaps of name call.
func (c *admissionCase) markerWebhook(name string) admissionregistrationv1.ValidatingWebhook {
	w := sideWebhook("marker.e2e.ctrlkit.dev", c.hooks.client("/marker"), c.selector)
	w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{markerLabel: name}}
	return w
}

// waitEffective waits until every configuration installed is in use: a
// marker ConfigMap reached the marker webhook of each webhook
// configuration; for a policy, until the case's object is denied.
func (c *admissionCase) waitEffective(policy bool) {
	t, ctx := c.t, c.t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range c.markers {
		for !c.hooks.marked(name) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "marker-", Labels: map[string]string{markerLabel: name}}}
			_, _ = c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{}) // only the marker webhook's call matters
			if time.Now().After(deadline) {
				t.Fatalf("the configuration %s never took effect", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !policy {
		return
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{"size": "large"}}}
	for {
		_, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			return // denied: the policy is in use
		}
		if err := c.cs.CoreV1().ConfigMaps(c.ns).Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the policy never took effect")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// create creates the case's ConfigMap "subject" with labels, and returns
// the outcome: the error, or the labels and data stored.
func (c *admissionCase) create(labels map[string]string) crOutcome {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject", Labels: labels}, Data: map[string]string{"set": "by the client"}}
	out, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(c.t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		st := apierrors.APIStatus(nil)
		if s, ok := err.(apierrors.APIStatus); ok {
			st = s
		}
		o := crOutcome{Message: err.Error(), Object: map[string]any{}}
		if st != nil {
			o.Code, o.Reason = st.Status().Code, string(st.Status().Reason)
		}
		return o
	}
	return crOutcome{Object: map[string]any{"labels": out.Labels, "data": out.Data}}
}

// cleanup deletes the case's configurations and namespaces, and forgets
// its webhooks' calls (the other side's case has the same names).
func (c *admissionCase) cleanup() {
	ctx := c.t.Context()
	c.hooks.forget(c.ns, c.markers)
	ar := c.cs.AdmissionregistrationV1()
	for _, obj := range c.installed {
		var err error
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			err = ar.MutatingWebhookConfigurations().Delete(ctx, o.Name, metav1.DeleteOptions{})
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			err = ar.ValidatingWebhookConfigurations().Delete(ctx, o.Name, metav1.DeleteOptions{})
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			err = ar.ValidatingAdmissionPolicies().Delete(ctx, o.Name, metav1.DeleteOptions{})
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			err = ar.ValidatingAdmissionPolicyBindings().Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
		if err != nil {
			c.t.Errorf("cleanup: %v", err)
		}
	}
	for _, ns := range []string{c.ns, c.ns + "-other"} {
		if err := c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			c.t.Errorf("cleanup: %v", err)
		}
	}
}

// sideWebhook is a validating webhook of ConfigMaps' creation in the
// namespaces of namespaces, at cc.
func sideWebhook(name string, cc admissionregistrationv1.WebhookClientConfig, namespaces *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector: namespaces,
		ObjectSelector:    &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notMarker}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}},
	}
}

// asMutating is the same webhook, mutating.
func asMutating(w admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: w.Name, ClientConfig: w.ClientConfig, SideEffects: w.SideEffects,
		AdmissionReviewVersions: w.AdmissionReviewVersions, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
		Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchConditions: w.MatchConditions}
}

// sideWarnings records the Warning headers a client receives.
type sideWarnings struct {
	mu   sync.Mutex
	list []string
}

func (w *sideWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *sideWarnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// sideHooks is the webhook server of the side-by-side tests: each path
// answers with its function, and counts its calls by namespace.
type sideHooks struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   map[string]map[string]int // namespace: path: calls
	markers map[string]bool           // configurations whose marker was called
}

func (h *sideHooks) client(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	url := h.srv.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
}

func (h *sideHooks) marked(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.markers[name]
}

// forget forgets the calls in namespace ns and the markers.
func (h *sideHooks) forget(ns string, markers []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.calls, ns)
	for _, m := range markers {
		delete(h.markers, m)
	}
}

// callsIn returns the calls of each path for objects of namespace ns, as
// "path:count", sorted.
func (h *sideHooks) callsIn(ns string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for path, n := range h.calls[ns] {
		out = append(out, fmt.Sprintf("%s:%d", path, n))
	}
	slices.Sort(out)
	return out
}

type answer func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) *admissionv1.AdmissionResponse

func newSideHooks(t *testing.T) *sideHooks {
	t.Helper()
	h := &sideHooks{calls: map[string]map[string]int{}, markers: map[string]bool{}}
	mux := http.NewServeMux()
	for path, fn := range sideAnswers() {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var cm corev1.ConfigMap
			_ = json.Unmarshal(review.Request.Object.Raw, &cm) // an answer looks at what it needs
			h.mu.Lock()
			if m := cm.Labels[markerLabel]; m != "" {
				h.markers[m] = true
			} else {
				if h.calls[review.Request.Namespace] == nil {
					h.calls[review.Request.Namespace] = map[string]int{}
				}
				h.calls[review.Request.Namespace][path]++
			}
			h.mu.Unlock()
			resp := fn(review.Request, &cm)
			resp.UID = review.Request.UID
			review.Response, review.Request = resp, nil
			_ = json.NewEncoder(w).Encode(&review) // the caller went away: nothing to tell it
		})
	}
	h.srv = httptest.NewTLSServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}
