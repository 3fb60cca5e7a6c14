// Package defaults sets the fields kube-apiserver v1.37 fills in when it
// receives an object: the API defaults of the built-in kinds that
// operators create and own. Call them on objects you build in Go before
// you plan or compare with them, as the API server would have defaulted
// them:
//
//	d := &appsv1.Deployment{...}
//	defaults.Deployment(d) // replicas 1, RollingUpdate 25%/25%, the pod-spec defaults, …
//
// Every function is named after its kind and sets what kube-apiserver
// v1.37 sets on that kind on create and on update (its defaulting
// functions, with the feature gates at their v1.37 defaults):
//
//   - Workloads: [Deployment], [ReplicaSet], [StatefulSet], [DaemonSet],
//     [Job], [CronJob], [ReplicationController], and [PodSpec] for any pod
//     template (the Deployment controller hashes the defaulted template,
//     so a template left undefaulted gets another pod-template-hash).
//   - Core: [Pod] (and [PodStatus] for status writes), [Service],
//     [Secret], [ConfigMap], [PersistentVolumeClaim], [PersistentVolume],
//     [Endpoints], [Node].
//   - Others: [HorizontalPodAutoscaler] (autoscaling/v2), [NetworkPolicy],
//     [IngressClass], [RoleBinding], [ClusterRoleBinding], [EndpointSlice].
//   - Admission: [MutatingWebhookConfiguration],
//     [ValidatingWebhookConfiguration], [ValidatingAdmissionPolicy],
//     [ValidatingAdmissionPolicyBinding], [MutatingAdmissionPolicy],
//     [MutatingAdmissionPolicyBinding].
//   - [Object] dispatches on the type, for any of the above.
//
// ControllerRevision, ServiceAccount, Event (core/v1 and events.k8s.io/v1),
// Ingress, Role, ClusterRole and Lease have no API defaults.
//
// Only API defaults are set. Fields the server owns and fills in during
// the request, with the object's identity or the cluster's state (a Job's
// generated selector and labels, a Service's cluster IP, a Pod's QoS class
// and status, a DaemonSet's template generation), what admission plugins
// add (a Pod's priority and default tolerations), and what kube-apiserver's
// conversions do (a Secret's stringData merged into data, a Node's
// podCIDRs) are not defaults: the in-memory API server (package
// memcluster) does those.
//
// Each function is idempotent (a second call changes nothing) and leaves
// a nil object alone. It changes a field that is set only where
// kube-apiserver does: quantities in resource lists are rounded up to
// milli precision ("0.0001" becomes "1m"), a Pod's negative grace period
// becomes 1, a Service with sessionAffinity None loses its
// sessionAffinityConfig, podIP and podIPs are made to agree.
package defaults
