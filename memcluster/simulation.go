package memcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

// ErrNotFake is returned by [Cluster.RunUntil] and [Cluster.Settle] on a
// cluster that does not run on a *clock.Fake.
var ErrNotFake = errors.New("memcluster: RunUntil needs a cluster on a *clock.Fake")

// RunUntil runs a simulation on the cluster's fake clock until cond holds:
// it is [clock.Fake.RunUntil] (see there), with a description of the
// cluster added to a stall. Virtual time moves on only when no work is
// left at the current instant, a fact the components report: the
// cluster's watches and kubelet, and the work queues and informers of this
// library on the same clock (your own components take part through
// [clock.Source]). So a run takes the same virtual time, and on a clock
// from [clock.NewDeterministic] does exactly the same things, however
// busy the machine is.
//
// It returns nil once cond holds, an error wrapping [clock.ErrTimeLimit]
// when the next timer is more than maxVirtual past the start, an error
// wrapping [clock.ErrStalled] at once when nothing is left to do and no timer is pending
// (the error lists the Deployments that are not rolled out and the pods
// that are not ready, the usual reasons), or, if ctx ends first, its error
// with the work that is still unfinished.
func (c *Cluster) RunUntil(ctx context.Context, cond func() bool, maxVirtual time.Duration) error {
	fc, ok := c.clock.(*clock.Fake)
	if !ok {
		return ErrNotFake
	}
	err := fc.RunUntil(ctx, cond, maxVirtual)
	if errors.Is(err, clock.ErrStalled) {
		if d := c.describeUnsettled(); d != "" {
			return fmt.Errorf("%w at %s\n%s", err, fc.Now().Format(time.RFC3339), d)
		}
	}
	return err
}

// Settle lets the tracked work of the current instant finish, without
// moving time: [clock.Fake.Settle] on the cluster's clock.
func (c *Cluster) Settle(ctx context.Context) error {
	fc, ok := c.clock.(*clock.Fake)
	if !ok {
		return ErrNotFake
	}
	return fc.Settle(ctx)
}

// maxDescribed bounds the objects of each kind describeUnsettled lists.
const maxDescribed = 10

// describeUnsettled lists what usually explains a stall: Deployments whose
// rollout is not over, and pods that are not ready.
func (c *Cluster) describeUnsettled() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for _, key := range slices.SortedFunc(maps.Keys(c.deployments.objs), cmpKey) {
		d := c.deployments.objs[key]
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want {
			continue
		}
		line := fmt.Sprintf("deployment %s: %d desired, %d updated, %d total, %d available", key, want, st.UpdatedReplicas, st.Replicas, st.AvailableReplicas)
		for _, cd := range st.Conditions {
			if cd.Type == appsv1.DeploymentProgressing || cd.Status != "True" {
				line += fmt.Sprintf("; %s=%s (%s)", cd.Type, cd.Status, cd.Reason)
			}
		}
		lines = append(lines, line)
	}
	lines = capLines(lines, "deployments")
	var pods []string
	for _, key := range slices.SortedFunc(maps.Keys(c.pods.objs), cmpKey) {
		if why := notReady(c.pods.objs[key]); why != "" {
			pods = append(pods, fmt.Sprintf("pod %s: %s", key, why))
		}
	}
	lines = append(lines, capLines(pods, "pods")...)
	return strings.Join(lines, "\n")
}

func capLines(lines []string, what string) []string {
	if len(lines) <= maxDescribed {
		return lines
	}
	return append(lines[:maxDescribed], fmt.Sprintf("... and %d more %s", len(lines)-maxDescribed, what))
}

// notReady says why p is not ready, or "" if it is (or has finished).
func notReady(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return ""
	}
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodReady && cd.Status == corev1.ConditionTrue {
			return ""
		}
	}
	why := string(cmp.Or(p.Status.Phase, "unscheduled"))
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why += ", " + cs.Name + " " + w.Reason
		}
	}
	return why
}

func cmpKey(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
