package clustertest_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// labelPods is a mutating webhook server that labels every pod
// "mutated=yes", outside any synctest bubble.
func labelPods(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`)}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review) // the caller went away: nothing to tell it
	}))
	t.Cleanup(srv.Close)
	return srv
}

func labelPodsConfig(srv *httptest.Server) *admissionregistrationv1.MutatingWebhookConfiguration {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label-pods"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "label.pods.ctrlkit.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/"), CABundle: ca},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
}

// A bench in virtual time calls a webhook served outside its bubble: the
// configuration created through the API applies to the next write, and
// the bench replays (same seed, same trace).
func TestWebhookFromTest(t *testing.T) {
	srv := labelPods(t)
	var traces [2][]string
	for i := range traces {
		clustertest.Test(t, clustertest.Options{Seed: 7, Disable: clustertest.AllControllers}, func(t *testing.T, c *clustertest.Cluster) {
			ctx := t.Context()
			if err := c.Client().Create(ctx, labelPodsConfig(srv)); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
			if err := c.Client().Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if pod.Labels["mutated"] != "yes" {
				t.Errorf("pod labels %v: the webhook was not called", pod.Labels)
			}
			traces[i] = c.Trace()
		})
	}
	if diff := cmp.Diff(traces[0], traces[1]); diff != "" {
		t.Errorf("the same bench twice, traces differ (-first +second):\n%s", diff)
	}
}
