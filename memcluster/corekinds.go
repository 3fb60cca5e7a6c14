package memcluster

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AddCoreKinds adds the kinds operators commonly touch besides
// Deployments, ReplicaSets, Pods and Namespaces (which every cluster
// stores): Services, ConfigMaps, Secrets, ServiceAccounts, core/v1 and
// events.k8s.io/v1 Events, coordination.k8s.io/v1 Leases and policy/v1
// PodDisruptionBudgets. Call it once, right after [New]; adding a kind
// twice panics.
//
// They have the generic semantics of [KindFor] with what kube-apiserver
// adds that a controller can observe:
//
//   - Services: type ClusterIP, sessionAffinity None, port protocol TCP
//     and targetPort equal to the port by default; a clusterIP (from
//     10.96.0.0/12, in creation order) and node ports (from 30000) are
//     allocated, kept by updates that leave them empty, and immutable.
//   - Secrets: type Opaque by default; stringData is merged into data.
//   - PodDisruptionBudgets: kube-apiserver's validation, and their status
//     as the disruption controller computes it (see [Cluster.Evict]).
//
// Differences: the generation is 1 for these kinds (kube-apiserver leaves
// it unset); core/v1 and events.k8s.io/v1 Events are two stores
// (kube-apiserver serves one store in both versions).
func AddCoreKinds(c *Cluster) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("memcluster: %v", err)) // static registrations
		}
	}
	NewResource(c, pdbKind()) // Namespaces are built in: see New

	svc := coreKind(s, &corev1.Service{}, KindOptions{})
	alloc := &serviceAllocator{}
	svc.Default = defaultService
	svc.PrepareCreate = func(sv *corev1.Service) {
		sv.Status = corev1.ServiceStatus{}
		alloc.allocate(sv)
	}
	svc.PrepareUpdate = keepServiceAllocations
	NewResource(c, svc)

	secret := coreKind(s, &corev1.Secret{}, KindOptions{})
	secret.Default = defaultSecret
	NewResource(c, secret)

	NewResource(c, coreKind(s, &corev1.ConfigMap{}, KindOptions{}))
	NewResource(c, coreKind(s, &corev1.ServiceAccount{}, KindOptions{}))
	NewResource(c, coreKind(s, &corev1.Event{}, KindOptions{}))
	NewResource(c, coreKind(s, &eventsv1.Event{}, KindOptions{}))
	NewResource(c, coreKind(s, &coordinationv1.Lease{}, KindOptions{}))
}

// coreKind is KindFor for a type of s that does not track generations.
func coreKind[T Object](s *runtime.Scheme, example T, o KindOptions) Kind[T] {
	k, err := KindFor(s, example, o)
	if err != nil {
		panic(err) // static registrations
	}
	k.Generation = nil
	return k
}

func defaultService(sv *corev1.Service) {
	s := &sv.Spec
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.Type != corev1.ServiceTypeExternalName && s.InternalTrafficPolicy == nil {
		s.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

// serviceAllocator hands out cluster IPs and node ports in creation order.
// Its hook runs under the cluster's lock, like every Kind hook.
type serviceAllocator struct{ ip, port int }

func (a *serviceAllocator) allocate(sv *corev1.Service) {
	s := &sv.Spec
	if s.Type != corev1.ServiceTypeExternalName && s.ClusterIP == "" {
		a.ip++ // 10.96.0.1 is the kubernetes service's, on a real cluster
		n := a.ip + 1
		s.ClusterIP = fmt.Sprintf("10.%d.%d.%d", 96+n>>16&0x0f, n>>8&0xff, n&0xff)
	}
	if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
		s.ClusterIPs = []string{s.ClusterIP}
	}
	if s.Type != corev1.ServiceTypeExternalName {
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if s.IPFamilyPolicy == nil {
			s.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
	}
	if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Ports {
			if s.Ports[i].NodePort == 0 {
				s.Ports[i].NodePort = int32(30000 + a.port%2768)
				a.port++
			}
		}
	}
}

// keepServiceAllocations keeps what the server allocated when an update
// leaves it empty, and refuses to change the cluster IP.
func keepServiceAllocations(sv, old *corev1.Service) field.ErrorList {
	s, o := &sv.Spec, &old.Spec
	if s.ClusterIP == "" {
		s.ClusterIP, s.ClusterIPs = o.ClusterIP, o.ClusterIPs
	}
	if len(s.ClusterIPs) == 0 {
		s.ClusterIPs = o.ClusterIPs
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = o.IPFamilies
	}
	if s.IPFamilyPolicy == nil {
		s.IPFamilyPolicy = o.IPFamilyPolicy
	}
	for i := range s.Ports {
		for _, op := range o.Ports {
			if s.Ports[i].NodePort == 0 && op.Port == s.Ports[i].Port && protocol(op.Protocol) == protocol(s.Ports[i].Protocol) {
				s.Ports[i].NodePort = op.NodePort
			}
		}
	}
	if s.ClusterIP != o.ClusterIP && o.ClusterIP != "" {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.ClusterIP, "may not change once set")}
	}
	return nil
}

func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
