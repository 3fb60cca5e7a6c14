package planner

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Counts reports whether p counts against q: q limits a pod resource
// and p is in every one of q's scopes. The error is a scope selector q's
// admission could not evaluate.
func (q Quota) Counts(p *corev1.Pod) (bool, error) {
	if !q.LimitsPods() {
		return false, nil
	}
	var reqs []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Scopes {
		reqs = append(reqs, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.ScopeSelector != nil {
		reqs = append(reqs, q.ScopeSelector.MatchExpressions...)
	}
	for _, r := range reqs {
		ok, err := inScope(p, r)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// inScope reports whether p is in the scope r names.
func inScope(p *corev1.Pod, r corev1.ScopedResourceSelectorRequirement) (bool, error) {
	terminating := p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating, nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating, nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(p), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(p), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(p), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if r.Operator == corev1.ScopeSelectorOpExists {
			return p.Spec.PriorityClassName != "", nil
		}
		op := map[corev1.ScopeSelectorOperator]selection.Operator{corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
			corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist}[r.Operator]
		if op == "" {
			return false, fmt.Errorf("planner: quota scope %s: operator %q is not supported", r.ScopeName, r.Operator)
		}
		req, err := labels.NewRequirement(string(r.ScopeName), op, r.Values)
		if err != nil {
			return false, fmt.Errorf("planner: quota scope %s: %w", r.ScopeName, err)
		}
		set := labels.Set{}
		if p.Spec.PriorityClassName != "" {
			set[string(r.ScopeName)] = p.Spec.PriorityClassName
		}
		return labels.NewSelector().Add(*req).Matches(set), nil
	}
	return false, nil
}

// bestEffort reports whether p has the BestEffort QoS class: no
// container requests or limits any cpu or memory.
func bestEffort(p *corev1.Pod) bool {
	if pl := p.Spec.Resources; pl != nil {
		for _, l := range []corev1.ResourceList{pl.Requests, pl.Limits} {
			for name, q := range l {
				if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && !q.IsZero() {
					return false
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name, q := range l {
					if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}

func crossNamespaceAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}
