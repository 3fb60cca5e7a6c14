package website

import (
	"context"
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// PodWebhookPath is where the pod webhook is served.
const PodWebhookPath = "/mutate--v1-pod"

// WebsiteLabel names the Website of a pod; the pod webhook's
// configuration selects the pods that have it (objectSelector).
const WebsiteLabel = "web.ctrlkit.dev/website"

// InjectedLabel is set on every pod the pod webhook mutated.
const InjectedLabel = "web.ctrlkit.dev/injected"

// WebsiteEnv is the environment variable the pod webhook gives every
// container of a Website's pod: the Website's name.
const WebsiteEnv = "WEBSITE_NAME"

// PodWebhook injects the name of its Website into every container of a
// pod labelled with one (WEBSITE_NAME), unless the container sets it, and
// labels the pod as injected: an admission.Handler answering with a JSON
// patch, as kubernetes-sigs/lws's pod webhook does.
type PodWebhook struct {
	Decoder admission.Decoder
}

//+kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,groups="",resources=pods,verbs=create,versions=v1,name=mpod.kb.io,sideEffects=None,admissionReviewVersions=v1

// Handle answers one AdmissionReview.
func (p *PodWebhook) Handle(_ context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := p.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	name := pod.Labels[WebsiteLabel]
	if name == "" {
		return admission.Allowed("not a website's pod")
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !hasEnv(c.Env, WebsiteEnv) {
			c.Env = append(c.Env, corev1.EnvVar{Name: WebsiteEnv, Value: name})
		}
	}
	pod.Labels[InjectedLabel] = "true"
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}
