package defaults

import (
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
	"k8s.io/apimachinery/pkg/runtime"
)

// Object sets the defaults of obj with the function of its kind, and
// reports whether it knows the kind: one of those this package names, or
// a kind kube-apiserver has no defaults for (ControllerRevision,
// ServiceAccount, core/v1 and events.k8s.io/v1 Event, Ingress, Role,
// ClusterRole, Lease), which it leaves alone. Other types are left alone
// and reported false.
func Object(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		Deployment(o)
	case *appsv1.ReplicaSet:
		ReplicaSet(o)
	case *appsv1.StatefulSet:
		StatefulSet(o)
	case *appsv1.DaemonSet:
		DaemonSet(o)
	case *batchv1.Job:
		Job(o)
	case *batchv1.CronJob:
		CronJob(o)
	case *corev1.Pod:
		Pod(o)
	case *corev1.ReplicationController:
		ReplicationController(o)
	case *corev1.Service:
		Service(o)
	case *corev1.Secret:
		Secret(o)
	case *corev1.ConfigMap:
		ConfigMap(o)
	case *corev1.PersistentVolumeClaim:
		PersistentVolumeClaim(o)
	case *corev1.PersistentVolume:
		PersistentVolume(o)
	case *corev1.Endpoints:
		Endpoints(o)
	case *corev1.Node:
		Node(o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		HorizontalPodAutoscaler(o)
	case *networkingv1.NetworkPolicy:
		NetworkPolicy(o)
	case *networkingv1.IngressClass:
		IngressClass(o)
	case *rbacv1.RoleBinding:
		RoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		ClusterRoleBinding(o)
	case *discoveryv1.EndpointSlice:
		EndpointSlice(o)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		MutatingWebhookConfiguration(o)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		ValidatingWebhookConfiguration(o)
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		ValidatingAdmissionPolicy(o)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		ValidatingAdmissionPolicyBinding(o)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		MutatingAdmissionPolicy(o)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		MutatingAdmissionPolicyBinding(o)
	case *appsv1.ControllerRevision, *corev1.ServiceAccount, *corev1.Event, *eventsv1.Event,
		*networkingv1.Ingress, *rbacv1.Role, *rbacv1.ClusterRole, *coordinationv1.Lease:
	default:
		return false
	}
	return true
}
