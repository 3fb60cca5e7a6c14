package memcluster

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AddBuiltinKinds adds every built-in kind memcluster models that [New]
// does not add (New serves Pods, ReplicaSets, Deployments and Namespaces):
//
//   - core/v1 Service, ConfigMap, Secret, ServiceAccount, Event;
//     events.k8s.io/v1 Event; coordination.k8s.io/v1 Lease; policy/v1
//     PodDisruptionBudget;
//   - apps/v1 StatefulSet, DaemonSet, ControllerRevision;
//   - batch/v1 Job, CronJob;
//   - core/v1 PersistentVolumeClaim, PersistentVolume, Endpoints, Node,
//     ReplicationController;
//   - autoscaling/v2 HorizontalPodAutoscaler;
//   - networking.k8s.io/v1 Ingress, IngressClass, NetworkPolicy;
//   - rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding,
//     ClusterRoleBinding;
//   - discovery.k8s.io/v1 EndpointSlice;
//   - admissionregistration.k8s.io/v1 MutatingWebhookConfiguration,
//     ValidatingWebhookConfiguration, ValidatingAdmissionPolicy,
//     ValidatingAdmissionPolicyBinding, MutatingAdmissionPolicy,
//     MutatingAdmissionPolicyBinding (which call nothing unless
//     [Config.Admission] is set, as the test bench sets it).
//
// Each is served as kube-apiserver v1.37 serves it, to what controllers
// observe: its API defaults (package defaults), the fields its server
// strategy owns (a status reset on create, a Job's generated selector and
// labels, a PersistentVolume's phase and its transition time, a
// DaemonSet's template generation, …), its generation rule, its status
// subresource and, for StatefulSets and ReplicationControllers, its scale
// subresource, the validation that guards controllers (required fields
// and immutable ones, with kube-apiserver's field paths), and its
// discovery entry with short names and categories. No controller runs
// for them: a StatefulSet creates no pods, a Job runs nothing, as in
// envtest. See the package documentation for what else differs.
//
// Kinds the cluster already has (added by you with [NewResource], say)
// are kept, so it may be called after them, and twice. It costs about a
// millisecond of CPU per cluster.
// Call it before the cluster serves requests. The test bench
// (controllerruntime/clustertest) calls it; a simulation that needs only
// Deployments, ReplicaSets and Pods does not need to.
func AddBuiltinKinds(c *Cluster) {
	addCoreKinds(c)
	for _, b := range builtins {
		if b.add != nil {
			b.add(c)
		}
	}
}

// builtin is a kind memcluster can serve: its version, plural, and how to
// add it (nil: [New] or addCoreKinds adds it).
type builtin struct {
	gvk      schema.GroupVersionKind
	resource string
	add      func(c *Cluster)
}

// builtins lists every built-in kind, for AddBuiltinKinds and for the
// message of a request for one the cluster does not serve.
var builtins = []builtin{
	{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), resource: "pods"},
	{gvk: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), resource: "replicasets"},
	{gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), resource: "deployments"},
	{gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), resource: "namespaces"},
	{gvk: corev1.SchemeGroupVersion.WithKind("Service"), resource: "services"},
	{gvk: corev1.SchemeGroupVersion.WithKind("Secret"), resource: "secrets"},
	{gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), resource: "configmaps"},
	{gvk: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), resource: "serviceaccounts"},
	{gvk: corev1.SchemeGroupVersion.WithKind("Event"), resource: "events"},
	{gvk: eventsv1.SchemeGroupVersion.WithKind("Event"), resource: "events"},
	{gvk: coordinationv1.SchemeGroupVersion.WithKind("Lease"), resource: "leases"},
	{appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "statefulsets", func(c *Cluster) { addKind(c, statefulSetKind()) }},
	{appsv1.SchemeGroupVersion.WithKind("DaemonSet"), "daemonsets", func(c *Cluster) { addKind(c, daemonSetKind()) }},
	{appsv1.SchemeGroupVersion.WithKind("ControllerRevision"), "controllerrevisions", func(c *Cluster) { addKind(c, controllerRevisionKind()) }},
	{batchv1.SchemeGroupVersion.WithKind("Job"), "jobs", func(c *Cluster) { addKind(c, jobKind()) }},
	{batchv1.SchemeGroupVersion.WithKind("CronJob"), "cronjobs", func(c *Cluster) { addKind(c, cronJobKind()) }},
	{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "persistentvolumeclaims", func(c *Cluster) { addKind(c, pvcKind()) }},
	{corev1.SchemeGroupVersion.WithKind("PersistentVolume"), "persistentvolumes", func(c *Cluster) { addKind(c, pvKind(c)) }},
	{corev1.SchemeGroupVersion.WithKind("Endpoints"), "endpoints", func(c *Cluster) { addKind(c, endpointsKind()) }},
	{corev1.SchemeGroupVersion.WithKind("Node"), "nodes", func(c *Cluster) { addKind(c, nodeKind()) }},
	{corev1.SchemeGroupVersion.WithKind("ReplicationController"), "replicationcontrollers", func(c *Cluster) { addKind(c, replicationControllerKind()) }},
	{autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), "horizontalpodautoscalers", func(c *Cluster) { addKind(c, hpaKind()) }},
	{networkingv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses", func(c *Cluster) { addKind(c, ingressKind()) }},
	{networkingv1.SchemeGroupVersion.WithKind("IngressClass"), "ingressclasses", func(c *Cluster) { addKind(c, ingressClassKind()) }},
	{networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), "networkpolicies", func(c *Cluster) { addKind(c, networkPolicyKind()) }},
	{rbacv1.SchemeGroupVersion.WithKind("Role"), "roles", func(c *Cluster) { addKind(c, roleKind()) }},
	{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "clusterroles", func(c *Cluster) { addKind(c, clusterRoleKind()) }},
	{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), "rolebindings", func(c *Cluster) { addKind(c, roleBindingKind()) }},
	{rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), "clusterrolebindings", func(c *Cluster) { addKind(c, clusterRoleBindingKind()) }},
	{discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), "endpointslices", func(c *Cluster) { addKind(c, endpointSliceKind()) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), "mutatingwebhookconfigurations",
		func(c *Cluster) { addKind(c, mutatingWebhookConfigurationKind(c)) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"), "validatingwebhookconfigurations",
		func(c *Cluster) { addKind(c, validatingWebhookConfigurationKind(c)) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"), "validatingadmissionpolicies",
		func(c *Cluster) { addKind(c, validatingAdmissionPolicyKind(c)) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"), "validatingadmissionpolicybindings",
		func(c *Cluster) { addKind(c, validatingAdmissionPolicyBindingKind(c)) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"), "mutatingadmissionpolicies",
		func(c *Cluster) { addKind(c, mutatingAdmissionPolicyKind(c)) }},
	{admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"), "mutatingadmissionpolicybindings",
		func(c *Cluster) { addKind(c, mutatingAdmissionPolicyBindingKind(c)) }},
}

// addKind adds k unless the cluster has its kind already.
func addKind[T Object](c *Cluster, k Kind[T]) {
	c.mu.Lock()
	_, has := c.kinds[k.groupKind()]
	c.mu.Unlock()
	if !has {
		NewResource(c, k)
	}
}

// unserved is the answer to a request for a resource the API does not
// serve.
func (a *api) unserved(gvr schema.GroupVersionResource) error {
	var served []schema.GroupVersionKind
	for other, st := range a.stores {
		if other.GroupResource() == gvr.GroupResource() {
			served = append(served, st.in.gvk)
		}
	}
	what := fmt.Sprintf("resource %q in %s", gvr.Resource, gvr.GroupVersion())
	return unservedError(gvr.GroupVersion(), gvr.Resource, what, served, builtinKind(func(b builtin) bool { return b.gvk.GroupVersion() == gvr.GroupVersion() && b.resource == gvr.Resource }))
}

func builtinKind(match func(builtin) bool) bool {
	return slices.ContainsFunc(builtins, match)
}

// unservedError is kube-apiserver's 404 for a resource it does not serve,
// with a message that names it and says how to add it.
func unservedError(gv schema.GroupVersion, name, what string, servedVersions []schema.GroupVersionKind, builtin bool) error {
	var hint string
	switch {
	case len(servedVersions) > 0:
		versions := map[string]bool{}
		for _, v := range servedVersions {
			versions[v.Version] = true
		}
		hint = fmt.Sprintf("it is served in %s %s only", gv.Group, strings.Join(slices.Sorted(maps.Keys(versions)), ", "))
	case builtin:
		hint = "add the built-in kinds with memcluster.AddBuiltinKinds (the test bench, clustertest, adds them)"
	default:
		hint = "add its Go type with memcluster.NewResource(c, kind) and memcluster.KindFor " +
			"(in the test bench: Options.Types or Options.Kinds), or install its CustomResourceDefinition"
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server could not find the requested resource: memcluster does not serve %s: %s", what, hint),
		Details: &metav1.StatusDetails{Group: gv.Group, Kind: name},
	}}
}

// builtinKindOf returns a Kind with the given REST names and no hooks.
func builtinKindOf[T Object](gvk schema.GroupVersionKind, resource string, newObj func() T, newList func() runtime.Object) Kind[T] {
	return Kind[T]{GVK: gvk, Resource: resource, New: newObj, NewList: newList}
}

// withStatus gives k a status subresource whose status is the part
// status(obj) points to. A status write takes the status and the labels
// and annotations of the object written (kube-apiserver's status
// strategies reset only the spec), then fix, if set, adjusts the new
// object given the old one (kube-apiserver defaults the object of a
// status write too). Create resets the status unless keepOnCreate.
func withStatus[T Object, S any, PS interface {
	*S
	DeepCopyInto(*S)
}](k *Kind[T], status func(T) PS, keepOnCreate bool, fix func(next, old T)) {
	k.CopyStatus = func(dst, src T) {
		var s S
		PS(status(src)).DeepCopyInto(&s)
		*status(dst) = s
	}
	k.StatusMeta = func(dst, src T) {
		dst.SetLabels(maps.Clone(src.GetLabels()))
		dst.SetAnnotations(maps.Clone(src.GetAnnotations()))
	}
	k.statusUpdate = func(old, in T) T {
		next := deepCopy(old)
		*status(next) = *status(in)
		next.SetLabels(in.GetLabels())
		next.SetAnnotations(in.GetAnnotations())
		if fix != nil {
			fix(next, old)
		}
		return next
	}
	k.statusEqual = func(old, next T) bool {
		return semanticEqual(status(old), status(next)) && semanticEqual(old.GetLabels(), next.GetLabels()) &&
			semanticEqual(old.GetAnnotations(), next.GetAnnotations())
	}
	if !keepOnCreate {
		prepare := k.PrepareCreate
		k.PrepareCreate = func(obj T) {
			var zero S
			*status(obj) = zero
			if prepare != nil {
				prepare(obj)
			}
		}
	}
}

// specGeneration makes changes of spec(obj) bump the generation.
func specGeneration[T Object, S any](k *Kind[T], spec func(T) *S) {
	k.Generation = func(obj T) any { return *spec(obj) }
}
