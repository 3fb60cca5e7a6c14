package defaults

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// HorizontalPodAutoscaler sets what kube-apiserver v1.37 sets on an
// autoscaling/v2 HorizontalPodAutoscaler on create and update:
// minReplicas 1; a CPU utilization target of 80% when there are no
// metrics; and, when a behavior is set, the unset parts of its scale-up
// rules (stabilization 0 s, the larger of 4 pods and 100% per 15 s) and
// scale-down rules (100% per 15 s; the stabilization window stays unset:
// the controller's flag decides it), the policy selection Max in both.
func HorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h == nil {
		return
	}
	s := &h.Spec
	if s.MinReplicas == nil {
		s.MinReplicas = ptr[int32](1)
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)},
			},
		}}
	}
	if b := s.Behavior; b != nil {
		b.ScaleUp = scalingRules(b.ScaleUp, autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
			},
		})
		b.ScaleDown = scalingRules(b.ScaleDown, autoscalingv2.HPAScalingRules{
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
		})
	}
}

// scalingRules fills the unset parts of r from def (whose policy
// selection is Max).
func scalingRules(r *autoscalingv2.HPAScalingRules, def autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	def.SelectPolicy = ptr(autoscalingv2.MaxChangePolicySelect)
	if r == nil {
		return &def
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = def.SelectPolicy
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.Policies == nil {
		r.Policies = def.Policies
	}
	return r
}

// NetworkPolicy sets what kube-apiserver v1.37 sets on a
// networking.k8s.io/v1 NetworkPolicy on create and update: policyTypes
// Ingress, plus Egress when there are egress rules, when unset; each
// port's protocol TCP.
func NetworkPolicy(np *networkingv1.NetworkPolicy) {
	if np == nil {
		return
	}
	s := &np.Spec
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) > 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	ports := func(ps []networkingv1.NetworkPolicyPort) {
		for i := range ps {
			if ps[i].Protocol == nil {
				ps[i].Protocol = ptr(corev1.ProtocolTCP)
			}
		}
	}
	for i := range s.Ingress {
		ports(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		ports(s.Egress[i].Ports)
	}
}

// IngressClass sets what kube-apiserver v1.37 sets on a
// networking.k8s.io/v1 IngressClass on create and update: the scope
// Cluster of its parameters.
func IngressClass(ic *networkingv1.IngressClass) {
	if ic == nil {
		return
	}
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		p.Scope = ptr(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}

// RoleBinding sets what kube-apiserver v1.37 sets on an
// rbac.authorization.k8s.io/v1 RoleBinding on create and update: the
// roleRef's apiGroup rbac.authorization.k8s.io, and each subject's
// apiGroup ("" for a ServiceAccount, rbac.authorization.k8s.io for a User
// or a Group).
func RoleBinding(rb *rbacv1.RoleBinding) {
	if rb == nil {
		return
	}
	binding(&rb.RoleRef, rb.Subjects)
}

// ClusterRoleBinding sets what kube-apiserver v1.37 sets on an
// rbac.authorization.k8s.io/v1 ClusterRoleBinding on create and update:
// as [RoleBinding].
func ClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) {
	if crb == nil {
		return
	}
	binding(&crb.RoleRef, crb.Subjects)
}

func binding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	setEmpty(&ref.APIGroup, rbacv1.GroupName)
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// EndpointSlice sets what kube-apiserver v1.37 sets on a
// discovery.k8s.io/v1 EndpointSlice on create and update: each port's
// name "" and protocol TCP.
func EndpointSlice(es *discoveryv1.EndpointSlice) {
	if es == nil {
		return
	}
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptr("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr(corev1.ProtocolTCP)
		}
	}
}
