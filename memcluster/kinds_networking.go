package memcluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The networking.k8s.io/v1 kinds. No ingress or network-policy
// controller runs.

func ingressKind() Kind[*networkingv1.Ingress] {
	k := builtinKindOf(networkingv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses",
		func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, func() runtime.Object { return &networkingv1.IngressList{} })
	k.ShortNames = []string{"ing"}
	k.Validate = validateIngress
	specGeneration(&k, func(i *networkingv1.Ingress) *networkingv1.IngressSpec { return &i.Spec })
	withStatus(&k, func(i *networkingv1.Ingress) *networkingv1.IngressStatus { return &i.Status }, false, nil)
	return k
}

func validateIngress(ing, _ *networkingv1.Ingress) field.ErrorList {
	spec := field.NewPath("spec")
	s := &ing.Spec
	var errs field.ErrorList
	if len(s.Rules) == 0 && s.DefaultBackend == nil {
		errs = append(errs, field.Invalid(spec, s.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	for i, r := range s.Rules {
		if r.HTTP == nil {
			continue
		}
		pp := spec.Child("rules").Index(i).Child("http", "paths")
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(pp, ""))
		}
		for j, p := range r.HTTP.Paths {
			path := pp.Index(j)
			if p.PathType == nil {
				errs = append(errs, field.Required(path.Child("pathType"), "pathType must be specified"))
				continue
			}
			switch *p.PathType {
			case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
				if !strings.HasPrefix(p.Path, "/") {
					errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
				}
			case networkingv1.PathTypeImplementationSpecific:
				if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
					errs = append(errs, field.Invalid(path.Child("path"), p.Path, "must be an absolute path"))
				}
			default:
				errs = append(errs, field.NotSupported(path.Child("pathType"), *p.PathType, []string{
					string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}))
			}
		}
	}
	return errs
}

func ingressClassKind() Kind[*networkingv1.IngressClass] {
	k := builtinKindOf(networkingv1.SchemeGroupVersion.WithKind("IngressClass"), "ingressclasses",
		func() *networkingv1.IngressClass { return &networkingv1.IngressClass{} }, func() runtime.Object { return &networkingv1.IngressClassList{} })
	k.ClusterScoped = true
	k.Default = defaults.IngressClass
	k.Validate = func(ic, old *networkingv1.IngressClass) field.ErrorList {
		controller := field.NewPath("spec", "controller")
		errs := domainPrefixedPath(controller, ic.Spec.Controller)
		if old != nil {
			errs = append(errs, immutable(ic.Spec.Controller, old.Spec.Controller, controller)...)
		}
		return errs
	}
	specGeneration(&k, func(ic *networkingv1.IngressClass) *networkingv1.IngressClassSpec { return &ic.Spec })
	return k
}

// domainPrefixedPath checks a "example.com/path" value, as the
// controller of an IngressClass is.
func domainPrefixedPath(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	domain, _, ok := strings.Cut(v, "/")
	if !ok || domain == "" {
		return field.ErrorList{field.Invalid(path, v, "must be a domain-prefixed path (such as \"acme.io/foo\")")}
	}
	return nil
}

func networkPolicyKind() Kind[*networkingv1.NetworkPolicy] {
	k := builtinKindOf(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), "networkpolicies",
		func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }, func() runtime.Object { return &networkingv1.NetworkPolicyList{} })
	k.ShortNames = []string{"netpol"}
	k.Default = defaults.NetworkPolicy
	k.Validate = validateNetworkPolicy
	specGeneration(&k, func(np *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicySpec { return &np.Spec })
	return k
}

func validateNetworkPolicy(np, _ *networkingv1.NetworkPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	s := &np.Spec
	errs := metav1validation.ValidateLabelSelector(&s.PodSelector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("podSelector"))
	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(spec.Child("policyTypes").Index(i), t, allowed))
		}
	}
	if len(s.PolicyTypes) > len(allowed) {
		errs = append(errs, field.Invalid(spec.Child("policyTypes"), s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	ports := func(ps []networkingv1.NetworkPolicyPort, path *field.Path) {
		for i, p := range ps {
			if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP {
				errs = append(errs, field.NotSupported(path.Index(i).Child("protocol"), *p.Protocol,
					[]string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}))
			}
		}
	}
	for i, r := range s.Ingress {
		ports(r.Ports, spec.Child("ingress").Index(i).Child("ports"))
	}
	for i, r := range s.Egress {
		ports(r.Ports, spec.Child("egress").Index(i).Child("ports"))
	}
	return errs
}
