package admission_test

import (
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkCreatePod creates pods in a cluster with the bench's
// admission: without any configuration (admission does nothing), with a
// webhook whose objectSelector the pods miss, and with a validating
// webhook each create calls over HTTPS.
func BenchmarkCreatePod(b *testing.B) {
	server := newHooks(b, map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{"/allow": allow})
	for _, bc := range []struct {
		name    string
		configs []client.Object
	}{
		{"no configuration", nil},
		{"webhook not matched", []client.Object{validating("miss.example.com", server.client("/allow"), func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matched"}}
		})}},
		{"webhook called", []client.Object{validating("allow.example.com", server.client("/allow"), nil)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newCluster(b)
			for _, cfg := range bc.configs {
				create(b, c, cfg.DeepCopyObject().(client.Object))
			}
			ctx := b.Context()
			// The first create starts the admission's informers (once).
			if _, err := c.Pods("web").Create(ctx, newPod("web", "first", nil), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			var i int
			for b.Loop() {
				i++
				if _, err := c.Pods("web").Create(ctx, newPod("web", fmt.Sprint("p", i), nil), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
