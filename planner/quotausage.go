package planner

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// heldUsage is what the simulation's pods are charged, per quota, kept up
// to date on every pod write the cluster stores (its OnWrite), so that a
// pod creation is judged without listing every pod: a plan of thousands
// of pods would otherwise cost the square of their number.
type heldUsage struct {
	quotas []Quota

	mu sync.Mutex
	// charges holds each pod's charge per quota (nil: it does not count),
	// sums their totals, by quota.
	charges map[string][]corev1.ResourceList
	sums    []corev1.ResourceList
	// pods and ends are the terminating pods whose charge drops once
	// past their deletion timestamp plus grace period, and when.
	pods map[string]*corev1.Pod
	ends map[string]time.Time
	err  error // a quota scope that could not be evaluated
}

func newHeldUsage(quotas []Quota) *heldUsage {
	h := &heldUsage{quotas: quotas, charges: map[string][]corev1.ResourceList{}, pods: map[string]*corev1.Pod{}, ends: map[string]time.Time{}}
	for range quotas {
		h.sums = append(h.sums, corev1.ResourceList{})
	}
	return h
}

// write takes one stored write into account (memcluster's OnWrite: quick,
// and without calling the cluster).
func (h *heldUsage) write(w memcluster.Write, now time.Time) {
	p, ok := w.Object.(*corev1.Pod)
	if w.Resource != "pods" || !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(key)
	if w.Type == watch.Deleted {
		return
	}
	h.charge(key, p, now)
}

func (h *heldUsage) drop(key string) {
	for i, c := range h.charges[key] {
		subList(h.sums[i], c)
	}
	delete(h.charges, key)
	delete(h.pods, key)
	delete(h.ends, key)
}

func (h *heldUsage) charge(key string, p *corev1.Pod, now time.Time) {
	cs := make([]corev1.ResourceList, len(h.quotas))
	for i, q := range h.quotas {
		c, err := q.charge(p, now)
		if err != nil && h.err == nil {
			h.err = err
		}
		cs[i] = c
		addList(h.sums[i], c)
	}
	h.charges[key] = cs
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && ChargedAt(p, now) {
		h.pods[key] = p
		h.ends[key] = p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
	}
}

// used returns the sums at now (copies), after charging again the pods
// whose grace period has ended since.
func (h *heldUsage) used(now time.Time) ([]corev1.ResourceList, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, end := range h.ends {
		if now.After(end) {
			p := h.pods[key]
			h.drop(key)
			h.charge(key, p, now)
		}
	}
	out := make([]corev1.ResourceList, len(h.sums))
	for i, s := range h.sums {
		out[i] = s.DeepCopy()
	}
	return out, h.err
}
