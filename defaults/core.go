package defaults

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// Service sets what kube-apiserver v1.37 sets on a core/v1 Service on
// create and update: type ClusterIP; sessionAffinity None (which drops a
// sessionAffinityConfig), and for ClientIP a timeout of 10800 s; each
// port's protocol TCP and targetPort equal to its port; for a NodePort or
// LoadBalancer Service (or a ClusterIP one with external IPs)
// externalTrafficPolicy Cluster; for the ClusterIP, NodePort and
// LoadBalancer types internalTrafficPolicy Cluster; for a LoadBalancer
// allocateLoadBalancerNodePorts true and the ipMode VIP of each ingress
// IP in the status.
//
// The cluster IPs, IP families and node ports are allocated by the
// server, not defaulted: memcluster allocates them.
func Service(sv *corev1.Service) {
	if sv == nil {
		return
	}
	s := &sv.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch s.SessionAffinity {
	case corev1.ServiceAffinityNone:
		s.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if c := s.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		setEmpty(&p.Protocol, corev1.ProtocolTCP)
		targetPort(p.Port, &p.TargetPort)
	}
	external := s.Type == corev1.ServiceTypeLoadBalancer || s.Type == corev1.ServiceTypeNodePort ||
		s.Type == corev1.ServiceTypeClusterIP && len(s.ExternalIPs) > 0
	if external && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		if s.InternalTrafficPolicy == nil {
			s.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if s.Type == corev1.ServiceTypeLoadBalancer {
		if s.AllocateLoadBalancerNodePorts == nil {
			s.AllocateLoadBalancerNodePorts = ptr(true)
		}
		for i := range sv.Status.LoadBalancer.Ingress {
			if in := &sv.Status.LoadBalancer.Ingress[i]; in.IP != "" && in.IPMode == nil {
				in.IPMode = ptr(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// Secret sets what kube-apiserver v1.37 sets on a core/v1 Secret on create
// and update: type Opaque. (Its conversion also merges stringData into
// data; the API server does that, not this function.)
func Secret(s *corev1.Secret) {
	if s != nil {
		setEmpty(&s.Type, corev1.SecretTypeOpaque)
	}
}

// ConfigMap sets what kube-apiserver v1.37 sets on a core/v1 ConfigMap on
// create and update: an empty data map for a nil one (which the wire
// forms then omit).
func ConfigMap(cm *corev1.ConfigMap) {
	if cm != nil && cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

// PersistentVolumeClaim sets what kube-apiserver v1.37 sets on a core/v1
// PersistentVolumeClaim on create and update (and on each of a
// StatefulSet's volume claim templates): volumeMode Filesystem, status
// phase Pending, and resource quantities rounded up to milli precision.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc == nil {
		return
	}
	setEmpty(&pvc.Status.Phase, corev1.ClaimPending)
	claimSpec(&pvc.Spec)
	roundUp(pvc.Status.Capacity)
	roundUp(pvc.Status.AllocatedResources)
}

// PersistentVolume sets what kube-apiserver v1.37 sets on a core/v1
// PersistentVolume on create and update: status phase Pending,
// persistentVolumeReclaimPolicy Retain, volumeMode Filesystem, the
// capacity rounded up to milli precision, hostPath type "", and the
// defaults of the in-tree iSCSI, RBD, Azure disk and ScaleIO sources.
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv == nil {
		return
	}
	setEmpty(&pv.Status.Phase, corev1.VolumePending)
	s := &pv.Spec
	setEmpty(&s.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimRetain)
	if s.VolumeMode == nil {
		s.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
	roundUp(s.Capacity)
	src := &s.PersistentVolumeSource
	hostPath(src.HostPath)
	if r := src.RBD; r != nil {
		rbd(&r.RBDPool, &r.RadosUser, &r.Keyring)
	}
	if i := src.ISCSI; i != nil && i.ISCSIInterface == "" {
		i.ISCSIInterface = "default"
	}
	if a := src.AzureDisk; a != nil {
		azureDisk(a)
	}
	if sc := src.ScaleIO; sc != nil {
		scaleIO(&sc.StorageMode, &sc.FSType)
	}
}

// Endpoints sets what kube-apiserver v1.37 sets on core/v1 Endpoints on
// create and update: each port's protocol TCP.
func Endpoints(e *corev1.Endpoints) {
	if e == nil {
		return
	}
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			setEmpty(&e.Subsets[i].Ports[j].Protocol, corev1.ProtocolTCP)
		}
	}
}

// Node sets what kube-apiserver v1.37 sets on a core/v1 Node on create and
// update (its status included): status.allocatable equal to
// status.capacity when unset, both rounded up to milli precision.
func Node(n *corev1.Node) {
	if n == nil {
		return
	}
	st := &n.Status
	if st.Allocatable == nil && st.Capacity != nil {
		st.Allocatable = make(corev1.ResourceList, len(st.Capacity))
		for name, q := range st.Capacity {
			st.Allocatable[name] = q.DeepCopy()
		}
	}
	roundUp(st.Capacity)
	roundUp(st.Allocatable)
}

// ReplicationController sets what kube-apiserver v1.37 sets on a core/v1
// ReplicationController on create and update: the selector and the
// controller's labels copied from its template's labels when empty,
// replicas 1, and the [PodSpec] defaults of its template.
func ReplicationController(rc *corev1.ReplicationController) {
	if rc == nil {
		return
	}
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr[int32](1)
	}
	if t := rc.Spec.Template; t != nil {
		PodSpec(&t.Spec)
	}
}
