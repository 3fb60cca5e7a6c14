package replicaset

import corev1 "k8s.io/api/core/v1"

// podCollector gathers the pods kept while reading listed pods in order.
// In the common case the pods kept are exactly the first list read (a
// settled ReplicaSet's own pods), so the collector shares that list until a
// kept pod differs from the next pod in it, and only then copies. The
// shared list is never written to, so it may belong to the lister.
type podCollector struct {
	pods   []*corev1.Pod
	shared bool
	size   int // capacity to allocate when copying
}

// newPodCollector returns a collector sharing first, expecting up to size
// pods in all.
func newPodCollector(first []*corev1.Pod, size int) podCollector {
	return podCollector{pods: first[:0:len(first)], shared: true, size: size}
}

// keep appends p.
func (c *podCollector) keep(p *corev1.Pod) {
	if c.shared {
		if n := len(c.pods); n < cap(c.pods) && c.pods[:n+1][n] == p {
			c.pods = c.pods[:n+1]
			return
		}
		c.pods = append(make([]*corev1.Pod, 0, max(c.size, len(c.pods)+1)), c.pods...)
		c.shared = false
	}
	c.pods = append(c.pods, p)
}
