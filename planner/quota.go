package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Quota is one ResourceQuota of the namespace as [Simulate] enforces it
// on every pod it creates, the way kube-apiserver's ResourceQuota
// admission plugin does: a pod whose usage would take a quota's used
// amount above its hard limit is refused (403, "exceeded quota: …"), and
// a quota on cpu or memory refuses a pod with a container that does not
// set them ("failed quota: …: must specify …"). Only the resources that
// pods consume are enforced (pods, count/pods, cpu, memory and
// ephemeral-storage with their requests. and limits. forms, hugepages,
// extended resources as requests.NAME); the others of Hard are ignored.
type Quota struct {
	// Name names it in refusal messages.
	Name string
	// Hard are the limits admission enforces: the quota's status.hard
	// (what its controller last copied from spec.hard).
	Hard corev1.ResourceList
	// Scopes and ScopeSelector are spec.scopes and spec.scopeSelector: a
	// pod counts against the quota only if it matches all of them.
	Scopes        []corev1.ResourceQuotaScope
	ScopeSelector *corev1.ScopeSelector
}

// QuotaFrom returns what q enforces on pods: its status.hard, or its
// spec.hard while its controller has not copied it yet.
func QuotaFrom(q *corev1.ResourceQuota) Quota {
	hard := q.Status.Hard
	if len(hard) == 0 {
		hard = q.Spec.Hard
	}
	return Quota{Name: q.Name, Hard: hard.DeepCopy(), Scopes: slices.Clone(q.Spec.Scopes), ScopeSelector: q.Spec.ScopeSelector.DeepCopy()}
}

// LimitsPods reports whether q limits any resource a pod consumes.
func (q Quota) LimitsPods() bool {
	for name := range q.Hard {
		if podResource(name) {
			return true
		}
	}
	return false
}

// countPods is the object-count form of the pods resource: every pod
// object stored, terminal ones included.
const countPods corev1.ResourceName = "count/pods"

// podResource reports whether name is a resource pods are charged for.
func podResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, countPods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage:
		return true
	}
	s := string(name)
	return strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
		(strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && strings.Contains(s, "/"))
}

// ChargedAt reports whether a pod is charged for its compute resources
// (and "pods") at now: not when it has finished (Succeeded or Failed),
// nor once a deleted pod is past its deletion timestamp plus its grace
// period (a pod stuck terminating on a lost node stops counting).
func ChargedAt(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
		end := p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// PodUsage is what a ResourceQuota charges p at now, under every name a
// quota may use: count/pods always (one object stored); while
// [ChargedAt], also pods and the pod's requests (cpu and requests.cpu are
// the same amount, likewise memory and ephemeral-storage) and limits,
// summed over its containers as the scheduler sums them (sidecars with
// the app containers, each other init container alone, the largest
// amount wins), pod-level resources in place of the containers' sum
// where set, and the pod overhead added. p is not modified.
func PodUsage(p *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{countPods: *resource.NewQuantity(1, resource.DecimalSI)}
	if !ChargedAt(p, now) {
		return out
	}
	out[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	requests := podAmounts(p, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
	limits := podAmounts(p, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if pl := p.Spec.Resources; pl != nil {
		for name, q := range pl.Requests {
			if podLevel(name) {
				requests[name] = q.DeepCopy()
			}
		}
		for name, q := range pl.Limits {
			if podLevel(name) {
				limits[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range p.Spec.Overhead {
		add(requests, name, q)
		if l, ok := limits[name]; ok && !l.IsZero() {
			add(limits, name, q)
		}
	}
	for _, r := range []struct {
		plain, req, lim corev1.ResourceName
	}{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.plain]; ok {
			out[r.plain], out[r.req] = q.DeepCopy(), q.DeepCopy()
		}
		if q, ok := limits[r.plain]; ok {
			out[r.lim] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		s := string(name)
		switch {
		case strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
			out[name] = q.DeepCopy()
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q.DeepCopy()
		case extended(name):
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q.DeepCopy()
		}
	}
	return out
}

// podLevel reports whether name may be set in a pod's spec.resources.
func podLevel(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// extended reports whether name is an extended resource (a domain other
// than kubernetes.io: example.com/gpu).
func extended(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// podAmounts sums one side (requests or limits) of p's containers: the
// app containers and the sidecars (restartable init containers) add up;
// each other init container runs with the sidecars started before it; the
// pod needs the larger of the two, per resource.
func podAmounts(p *corev1.Pod, side func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for name, q := range side(c.Resources) {
			add(sum, name, q)
		}
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		use := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for name, q := range side(c.Resources) {
				add(sum, name, q)
				add(sidecars, name, q)
			}
			use = sidecars.DeepCopy()
		} else {
			for name, q := range side(c.Resources) {
				add(use, name, q)
			}
			for name, q := range sidecars {
				add(use, name, q)
			}
		}
		for name, q := range use {
			if cur, ok := initPeak[name]; !ok || q.Cmp(cur) > 0 {
				initPeak[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range initPeak {
		if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
			sum[name] = q.DeepCopy()
		}
	}
	return sum
}

func add(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur := l[name]
	cur.Add(q)
	l[name] = cur
}

// mustSpecify is the resources whose quota makes every container set
// them (a historical rule of the pod evaluator, for cpu and memory only).
var mustSpecify = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory}

// AdmitPod decides whether ResourceQuota admission lets pod be created
// at now, when the pods held are already charged: nil, or the 403 error
// kube-apiserver answers, naming the first quota (in order) that refuses
// it. pod is the pod as admission sees it: defaulted, with LimitRange
// defaults applied ([ApplyLimitRanges]). No argument is modified.
func AdmitPod(quotas []Quota, pod *corev1.Pod, held []*corev1.Pod, now time.Time) error {
	used := make([]corev1.ResourceList, len(quotas))
	for i, q := range quotas {
		used[i] = corev1.ResourceList{}
		for _, h := range held {
			c, err := q.charge(h, now)
			if err != nil {
				return err
			}
			addList(used[i], c)
		}
	}
	return admit(quotas, pod, used, now)
}

// charge is what q charges p at now: p's usage of the resources q
// limits; nil when p does not count against q.
func (q Quota) charge(p *corev1.Pod, now time.Time) (corev1.ResourceList, error) {
	if ok, err := q.Counts(p); err != nil || !ok {
		return nil, err
	}
	out := corev1.ResourceList{}
	for name, v := range PodUsage(p, now) {
		if _, limited := q.Hard[name]; limited {
			out[name] = v
		}
	}
	return out, nil
}

// admit is AdmitPod with each quota's charges already summed (used[i]
// for quotas[i], the resources it limits).
func admit(quotas []Quota, pod *corev1.Pod, used []corev1.ResourceList, now time.Time) error {
	forbidden := func(err error) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, cmp.Or(pod.Name, pod.GenerateName), err)
	}
	want := PodUsage(pod, now)
	for i, q := range quotas {
		ok, err := q.Counts(pod)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := q.constraints(pod); err != nil {
			return forbidden(fmt.Errorf("failed quota: %s: %v", q.Name, err))
		}
		var over []corev1.ResourceName
		for name, v := range want {
			hard, limited := q.Hard[name]
			if !limited || v.IsZero() {
				continue
			}
			total := used[i][name].DeepCopy()
			total.Add(v)
			if total.Cmp(hard) > 0 {
				over = append(over, name)
			}
		}
		if len(over) > 0 {
			return forbidden(fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, listOf(want, over), listOf(used[i], over), listOf(q.Hard, over)))
		}
	}
	return nil
}

// addList adds the amounts of b to a.
func addList(a, b corev1.ResourceList) {
	for name, v := range b {
		add(a, name, v)
	}
}

// subList subtracts the amounts of b from a.
func subList(a, b corev1.ResourceList) {
	for name, v := range b {
		cur := a[name]
		cur.Sub(v)
		a[name] = cur
	}
}

// constraints is the pod evaluator's rule that a quota on cpu or memory
// requires every container to set it.
func (q Quota) constraints(p *corev1.Pod) error {
	if pl := p.Spec.Resources; pl != nil && (slices.ContainsFunc(slices.Collect(maps.Keys(pl.Requests)), podLevel) ||
		slices.ContainsFunc(slices.Collect(maps.Keys(pl.Limits)), podLevel)) {
		return nil // pod-level resources set: containers need not
	}
	var required []corev1.ResourceName
	for _, name := range mustSpecify {
		if _, ok := q.Hard[name]; ok {
			required = append(required, name)
		}
	}
	if len(required) == 0 {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			has := PodUsage(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}, time.Time{})
			for _, name := range required {
				if _, ok := has[name]; !ok && !slices.Contains(missing[name], c.Name) {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		names := slices.Sorted(slices.Values(missing[name]))
		parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(names, ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// listOf renders the amounts of l for names as admission does:
// name=amount, sorted, comma-separated.
func listOf(l corev1.ResourceList, names []corev1.ResourceName) string {
	var parts []string
	for _, name := range slices.Sorted(slices.Values(names)) {
		v := l[name]
		parts = append(parts, string(name)+"="+v.String())
	}
	return strings.Join(parts, ",")
}
