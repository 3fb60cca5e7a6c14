package memcluster

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// The rbac.authorization.k8s.io/v1 kinds: stored and validated; nothing
// is authorized with them (memcluster has no authorization). Their names
// are path segments, so "system:controller:x" is fine.

func roleKind() Kind[*rbacv1.Role] {
	k := builtinKindOf(rbacv1.SchemeGroupVersion.WithKind("Role"), "roles",
		func() *rbacv1.Role { return &rbacv1.Role{} }, func() runtime.Object { return &rbacv1.RoleList{} })
	k.validName = path.ValidatePathSegmentName
	k.Validate = func(r, _ *rbacv1.Role) field.ErrorList { return validateRules(r.Rules, true) }
	return k
}

func clusterRoleKind() Kind[*rbacv1.ClusterRole] {
	k := builtinKindOf(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "clusterroles",
		func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} }, func() runtime.Object { return &rbacv1.ClusterRoleList{} })
	k.ClusterScoped = true
	k.validName = path.ValidatePathSegmentName
	k.Validate = func(r, _ *rbacv1.ClusterRole) field.ErrorList { return validateRules(r.Rules, false) }
	return k
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups)+len(r.Resources)+len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func roleBindingKind() Kind[*rbacv1.RoleBinding] {
	k := builtinKindOf(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), "rolebindings",
		func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} }, func() runtime.Object { return &rbacv1.RoleBindingList{} })
	k.validName = path.ValidatePathSegmentName
	k.Default = defaults.RoleBinding
	k.Validate = func(rb, old *rbacv1.RoleBinding) field.ErrorList {
		var oldRef *rbacv1.RoleRef
		if old != nil {
			oldRef = &old.RoleRef
		}
		return validateBinding(rb.RoleRef, oldRef, rb.Subjects, true)
	}
	return k
}

func clusterRoleBindingKind() Kind[*rbacv1.ClusterRoleBinding] {
	k := builtinKindOf(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), "clusterrolebindings",
		func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} }, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} })
	k.ClusterScoped = true
	k.validName = path.ValidatePathSegmentName
	k.Default = defaults.ClusterRoleBinding
	k.Validate = func(crb, old *rbacv1.ClusterRoleBinding) field.ErrorList {
		var oldRef *rbacv1.RoleRef
		if old != nil {
			oldRef = &old.RoleRef
		}
		return validateBinding(crb.RoleRef, oldRef, crb.Subjects, false)
	}
	return k
}

// validateBinding validates a RoleBinding (namespaced) or a
// ClusterRoleBinding; old is the stored roleRef on update, which may not
// change.
func validateBinding(ref rbacv1.RoleRef, old *rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), ""))
	}
	for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
		errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
	}
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	if old != nil {
		errs = append(errs, immutable(ref, *old, rp)...)
	}
	return errs
}
