package website

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// MaxFreeReplicas is the most replicas a free Website may have.
const MaxFreeReplicas = 3

// ProtectedAnnotation, set to "true", makes the validating webhook refuse
// the deletion of a Website.
const ProtectedAnnotation = "web.ctrlkit.dev/protected"

// TierLabel is the label the defaulting webhook sets to the tier.
const TierLabel = "web.ctrlkit.dev/tier"

// SetupWebhooks registers the Website's defaulting and validating
// webhooks with mgr (at /mutate-web-ctrlkit-dev-v1-website and
// /validate-web-ctrlkit-dev-v1-website) and the pod webhook (at
// /mutate--v1-pod).
func SetupWebhooks(mgr ctrl.Manager) error {
	err := ctrl.NewWebhookManagedBy(mgr, &Website{}).
		WithDefaulter(&WebsiteWebhook{}).
		WithValidator(&WebsiteWebhook{}).
		Complete()
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(PodWebhookPath, &admission.Webhook{Handler: &PodWebhook{Decoder: admission.NewDecoder(mgr.GetScheme())}})
	return nil
}

// WebsiteWebhook defaults and validates Websites.
type WebsiteWebhook struct{}

var (
	_ admission.Defaulter[*Website] = &WebsiteWebhook{}
	_ admission.Validator[*Website] = &WebsiteWebhook{}
)

//+kubebuilder:webhook:path=/mutate-web-ctrlkit-dev-v1-website,mutating=true,failurePolicy=fail,sideEffects=None,groups=web.ctrlkit.dev,resources=websites,verbs=create;update,versions=v1,name=mwebsite.kb.io,admissionReviewVersions=v1

// Default sets one replica and the free tier, and labels the Website
// with its tier.
func (*WebsiteWebhook) Default(_ context.Context, w *Website) error {
	if w.Spec.Replicas == nil {
		one := int32(1)
		w.Spec.Replicas = &one
	}
	if w.Spec.Tier == "" {
		w.Spec.Tier = TierFree
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[TierLabel] = w.Spec.Tier
	return nil
}

//+kubebuilder:webhook:path=/validate-web-ctrlkit-dev-v1-website,mutating=false,failurePolicy=fail,sideEffects=None,groups=web.ctrlkit.dev,resources=websites,verbs=create;update;delete,versions=v1,name=vwebsite.kb.io,admissionReviewVersions=v1

// ValidateCreate refuses a Website without an image, of an unknown tier,
// or free with more than MaxFreeReplicas replicas; it warns about an
// image without a tag.
func (*WebsiteWebhook) ValidateCreate(_ context.Context, w *Website) (admission.Warnings, error) {
	return warnings(w), invalid(w, validate(w))
}

// ValidateUpdate also refuses a change of tier.
func (*WebsiteWebhook) ValidateUpdate(_ context.Context, old, w *Website) (admission.Warnings, error) {
	errs := validate(w)
	if w.Spec.Tier != old.Spec.Tier {
		errs = append(errs, field.Invalid(field.NewPath("spec", "tier"), w.Spec.Tier, "field is immutable"))
	}
	return warnings(w), invalid(w, errs)
}

// ValidateDelete refuses to delete a protected Website.
func (*WebsiteWebhook) ValidateDelete(_ context.Context, w *Website) (admission.Warnings, error) {
	if w.Annotations[ProtectedAnnotation] == "true" {
		return nil, fmt.Errorf("website %s is protected: remove the %s annotation first", w.Name, ProtectedAnnotation)
	}
	return nil, nil
}

func validate(w *Website) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if w.Spec.Image == "" {
		errs = append(errs, field.Required(spec.Child("image"), "a website needs an image"))
	}
	switch w.Spec.Tier {
	case TierFree:
		if r := w.Spec.Replicas; r != nil && *r > MaxFreeReplicas {
			errs = append(errs, field.Invalid(spec.Child("replicas"), *r, fmt.Sprintf("a free website has at most %d replicas", MaxFreeReplicas)))
		}
	case TierPro:
	default:
		errs = append(errs, field.NotSupported(spec.Child("tier"), w.Spec.Tier, []string{TierFree, TierPro}))
	}
	return errs
}

// invalid is the Invalid error of w with errs, or nil.
func invalid(w *Website, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("Website").GroupKind(), w.Name, errs)
}

func warnings(w *Website) admission.Warnings {
	if w.Spec.Image != "" && !strings.Contains(w.Spec.Image, ":") && !strings.Contains(w.Spec.Image, "@") {
		return admission.Warnings{fmt.Sprintf("image %q has no tag: pin a version", w.Spec.Image)}
	}
	return nil
}
