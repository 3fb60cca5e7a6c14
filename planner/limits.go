package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LimitRangeAnnotation is where the LimitRanger admission plugin records
// the defaults it set on a pod.
const LimitRangeAnnotation = "kubernetes.io/limit-ranger"

// ApplyLimitRanges does to a new pod what kube-apiserver does before its
// quota is checked: the API defaulting that copies a container's limit
// into its missing request, then the LimitRanger admission plugin's
// defaults. For each LimitRange in order, the default (limits) and
// defaultRequest (requests) of its Container items (a later item wins)
// go to every container and init container that does not set that
// resource yet, so an earlier range wins. A LimitRange read from the API
// server has its own defaults filled in (default from max,
// defaultRequest from default, then from min); they are filled in here
// too, for hand-built ones. What a range set is recorded in the
// kubernetes.io/limit-ranger annotation, as LimitRanger records it. p is
// modified. LimitRange validation (min, max, ratios) is not done: a pod
// it would refuse is created.
func ApplyLimitRanges(p *corev1.Pod, ranges []corev1.LimitRange) {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			requestsFromLimits(&cs[i].Resources)
		}
	}
	for _, lr := range ranges {
		defLimits, defRequests := corev1.ResourceList{}, corev1.ResourceList{}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			limit, request := itemDefaults(item)
			maps.Copy(defLimits, limit)
			maps.Copy(defRequests, request)
		}
		var notes []string
		for _, group := range []struct {
			what string
			cs   []corev1.Container
		}{{"container", p.Spec.Containers}, {"init container", p.Spec.InitContainers}} {
			for i := range group.cs {
				c := &group.cs[i]
				lim := fill(&c.Resources.Limits, defLimits)
				req := fill(&c.Resources.Requests, defRequests)
				if len(req) > 0 {
					notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(req, ", "), group.what, c.Name))
				}
				if len(lim) > 0 {
					notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(lim, ", "), group.what, c.Name))
				}
			}
		}
		if len(notes) > 0 {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[LimitRangeAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
}

// itemDefaults is a Container item's default and defaultRequest as the
// API server stores them: a default limit from max where unset, a
// default request from the default limit, else from min.
func itemDefaults(item corev1.LimitRangeItem) (limit, request corev1.ResourceList) {
	limit, request = item.Default.DeepCopy(), item.DefaultRequest.DeepCopy()
	if limit == nil {
		limit = corev1.ResourceList{}
	}
	if request == nil {
		request = corev1.ResourceList{}
	}
	for name, q := range item.Max {
		if _, ok := limit[name]; !ok {
			limit[name] = q.DeepCopy()
		}
	}
	for name, q := range limit {
		if _, ok := request[name]; !ok {
			request[name] = q.DeepCopy()
		}
	}
	for name, q := range item.Min {
		if _, ok := request[name]; !ok {
			request[name] = q.DeepCopy()
		}
	}
	return limit, request
}

// fill sets the resources of defaults that l lacks and returns their
// names, sorted.
func fill(l *corev1.ResourceList, defaults corev1.ResourceList) []string {
	var set []string
	for name, q := range defaults {
		if _, ok := (*l)[name]; ok {
			continue
		}
		if *l == nil {
			*l = corev1.ResourceList{}
		}
		(*l)[name] = q.DeepCopy()
		set = append(set, string(name))
	}
	slices.Sort(set)
	return set
}

// requestsFromLimits is the API server's defaulting of a new pod: a
// container's limit without a request becomes its request too.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	for name, q := range r.Limits {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}
