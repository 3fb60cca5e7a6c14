package clustertest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrTimeLimit is returned by RunUntil when its condition does not hold
// within the virtual time limit.
var ErrTimeLimit = errors.New("clustertest: virtual time limit reached")

// Settle lets everything that can happen at the current virtual instant
// happen: it returns once every request has been answered, every watch
// event delivered and handled, and every goroutine of the bubble is
// blocked. Time does not move.
func (c *Cluster) Settle() { c.sched.settle() }

// Advance lets d of virtual time pass, with everything due meanwhile
// happening at its time (requeues, kubelet transitions, progress
// deadlines), then settles.
func (c *Cluster) Advance(d time.Duration) {
	time.Sleep(d)
	c.Settle()
}

// RunUntil lets virtual time pass until cond holds, for at most limit. It
// checks cond once everything has settled, then again whenever the
// cluster has stored a write or delivered a watch event and everything has
// settled again (cond must therefore depend on the cluster's state or on
// what your code does when the cluster changes; it may read from the
// cluster, but must not write to it), and returns nil once it holds. Otherwise
// it returns an error wrapping ErrTimeLimit, with the Deployments that are
// not rolled out and the pods that are not ready. It takes no wall-clock
// time beyond the work itself: a condition an hour away is reached in
// milliseconds.
func (c *Cluster) RunUntil(cond func() bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		changed := c.sched.changes()
		c.Settle()
		if cond() {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w (%v, at +%v)%s", ErrTimeLimit, limit, c.Now(), c.describe())
		}
		select {
		case <-changed:
		case <-timer.C:
		}
	}
}

// MustRunUntil is RunUntil, failing the test with what was awaited when
// the limit is reached.
func (c *Cluster) MustRunUntil(what string, cond func() bool, limit time.Duration) {
	c.t.Helper()
	if err := c.RunUntil(cond, limit); err != nil {
		c.t.Fatalf("waiting until %s: %v", what, err)
	}
}

// describe lists the Deployments that are not rolled out and the pods that
// are not ready.
func (c *Cluster) describe() string {
	c.rec.mu.Lock()
	deps := slices.Collect(maps.Values(c.rec.deps))
	c.rec.mu.Unlock()
	slices.SortFunc(deps, func(a, b *appsv1.Deployment) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var lines []string
	for _, d := range deps {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want {
			continue
		}
		lines = append(lines, fmt.Sprintf("deployment %s/%s: %d desired, %d updated, %d available", d.Namespace, d.Name, want, st.UpdatedReplicas, st.AvailableReplicas))
	}
	pods, _, err := c.mc.Pods("").List(c.ctx, metav1.ListOptions{})
	if err == nil {
		for _, p := range pods {
			if ready(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			line := fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, cmp.Or(string(p.Status.Phase), "unscheduled"))
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason != "" {
					line += fmt.Sprintf(", container %s %s", cs.Name, w.Reason)
				}
			}
			if p.DeletionTimestamp != nil {
				line += ", terminating"
			}
			lines = append(lines, line)
		}
	}
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("... and %d more", len(lines)-20))
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n" + strings.Join(lines, "\n")
}

func ready(p *corev1.Pod) bool {
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodReady {
			return cd.Status == corev1.ConditionTrue
		}
	}
	return false
}
