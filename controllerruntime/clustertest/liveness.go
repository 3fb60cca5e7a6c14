package clustertest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// livenessBound bounds how long Liveness waits for Deployments that keep
// changing without rolling out: they are not stalled (see [Converges]
// for a bound on convergence).
const livenessBound = 24 * time.Hour

// Liveness fails when, once the scenario has returned, a Deployment whose
// spec can be met is not rolled out and has stopped moving: neither it,
// nor its ReplicaSets, nor their pods change for idle of virtual time. A
// controller stopped with work left (a sync that was dropped, a wait for
// an event that is not coming, a controller that never runs) leaves a
// rollout stuck for good; in production that is an outage nobody is
// paged for. It waits as long as the Deployment moves (up to a day of
// virtual time), so a slow rollout is not a stall; [Converges] bounds how
// long a rollout may take.
//
// A Deployment can be met unless it is paused, being deleted, or a pod of
// its current template fails for reasons of its own: it is in phase
// Failed (the kubelet rejected it), or a container waits in ImagePullBackOff,
// ErrImagePull, InvalidImageName, CrashLoopBackOff or a
// CreateContainer/RunContainer error. Such a rollout rightly stops
// unfinished until its user changes it. A Deployment rolled out has its
// status at its generation with every replica updated, available and
// current (as kubectl rollout status).
//
// Pick idle longer than the longest quiet spell of a healthy rollout of
// your scenario: the pod start-up and readiness delays of the bench's
// kubelet, a minReadySeconds, a requeue your operator waits for. A
// minute suits the bench's defaults.
func Liveness(idle time.Duration) Property {
	return Property{Name: "liveness", AtEnd: func(c *Cluster) error {
		deadline := c.Now() + livenessBound
		for {
			unmet, moved := c.unmetDeployments()
			if len(unmet) == 0 {
				return nil
			}
			since := c.Now()
			var err error
			if err = c.RunUntil(func() bool {
				now, m := c.unmetDeployments()
				return len(now) == 0 || m != moved
			}, idle); err == nil {
				if c.Now() > deadline {
					return fmt.Errorf("not rolled out after a day of changes (not a stall; see Converges): %s", strings.Join(unmet, "; "))
				}
				continue // something moved: watch again
			}
			return fmt.Errorf("stalled: nothing moved from +%v to +%v, and %s", since, c.Now(), strings.Join(unmet, "; "))
		}
	}}
}

// unmetDeployments describes the Deployments that can be met and are not
// rolled out, and returns a fingerprint of them, their ReplicaSets and
// their pods (their resourceVersions): when it changes, they moved.
func (c *Cluster) unmetDeployments() (unmet []string, fingerprint string) {
	s := &State{c: c}
	rss := ObjectsOf[*appsv1.ReplicaSet](s, "replicasets")
	pods := ObjectsOf[*corev1.Pod](s, "pods")
	var fp strings.Builder
	for _, d := range ObjectsOf[*appsv1.Deployment](s, "deployments") {
		if rolledOut(d) || d.Spec.Paused || d.DeletionTimestamp != nil {
			continue
		}
		owned := ownedBy(d.UID, rss)
		var current []*corev1.Pod
		fmt.Fprintf(&fp, "%s/%s@%s", d.Namespace, d.Name, d.ResourceVersion)
		for _, rs := range owned {
			fmt.Fprintf(&fp, " %s@%s", rs.Name, rs.ResourceVersion)
			rsPods := ownedBy(rs.UID, pods)
			for _, p := range rsPods {
				fmt.Fprintf(&fp, " %s@%s", p.Name, p.ResourceVersion)
			}
			if rollout.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
				current = append(current, rsPods...)
			}
		}
		fp.WriteByte('\n')
		if slices.ContainsFunc(current, podFailing) {
			continue // its spec cannot be met as it is
		}
		st, want := d.Status, replicasOfDeployment(d)
		unmet = append(unmet, fmt.Sprintf("deployment %s/%s can be met but is not rolled out: generation %d observed %d, %d replicas, %d updated, %d available, want %d; %s",
			d.Namespace, d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, want, replicaSetsText(owned, pods)))
	}
	return unmet, fp.String()
}

// rolledOut reports whether d is rolled out at its generation, as kubectl
// rollout status decides.
func rolledOut(d *appsv1.Deployment) bool {
	st, want := d.Status, replicasOfDeployment(d)
	return d.Generation <= st.ObservedGeneration && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want
}

// ownedBy returns the objects of objs whose controller is uid.
func ownedBy[T metav1.Object](uid types.UID, objs []T) []T {
	var out []T
	for _, o := range objs {
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.UID == uid {
			out = append(out, o)
		}
	}
	return out
}

// replicaSetsText describes a Deployment's ReplicaSets for a liveness
// message: spec, status (and the generation it observed) and pods.
func replicaSetsText(rss []*appsv1.ReplicaSet, pods []*corev1.Pod) string {
	if len(rss) == 0 {
		return "no ReplicaSets"
	}
	parts := make([]string, len(rss))
	for i, rs := range rss {
		parts[i] = fmt.Sprintf("replicaset %s: spec %d, status %d (generation %d observed %d), %d pods",
			rs.Name, replicasOf(rs), rs.Status.Replicas, rs.Generation, rs.Status.ObservedGeneration, len(ownedBy(rs.UID, pods)))
	}
	return strings.Join(parts, ", ")
}

// podFailing reports whether p fails for reasons of its own (see
// Liveness).
func podFailing(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, cs := range append(slices.Clip(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
				"CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return true
			}
		}
	}
	return false
}
