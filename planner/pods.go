package planner

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// PodCauses counts a ReplicaSet's unavailable pods by cause. Each pod
// counts once, under the first cause that applies, in field order.
type PodCauses struct {
	// Terminating pods have a deletion timestamp.
	Terminating int32
	// Unscheduled pods have no node: no nodeName, or PodScheduled=False.
	Unscheduled int32
	// ImagePull pods wait on an image: a container waiting with reason
	// ErrImagePull, ImagePullBackOff or InvalidImageName.
	ImagePull int32
	// CrashLooping pods have a container waiting with CrashLoopBackOff,
	// or restarts and no readiness.
	CrashLooping int32
	// NotReady pods run (or start) but are not Ready yet.
	NotReady int32
	// MinReadySeconds pods are Ready but not for minReadySeconds yet.
	MinReadySeconds int32
	// Missing pods were never created: spec.replicas exceeds the active
	// pods (quota, admission, a create error, or a controller behind).
	Missing int32
}

// Total is the number of unavailable pods counted.
func (c PodCauses) Total() int32 {
	return c.Terminating + c.Unscheduled + c.ImagePull + c.CrashLooping + c.NotReady + c.MinReadySeconds + c.Missing
}

// String lists the non-zero causes, e.g. "3 crash-looping, 2 unscheduled".
func (c PodCauses) String() string {
	var parts []string
	for _, p := range []struct {
		n    int32
		what string
	}{
		{c.CrashLooping, "crash-looping"}, {c.ImagePull, "failing to pull the image"},
		{c.Unscheduled, "unscheduled"}, {c.NotReady, "not ready yet"},
		{c.MinReadySeconds, "waiting for minReadySeconds"}, {c.Terminating, "terminating"},
		{c.Missing, "not created"},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

// ClassifyPods counts why the pods rs controls (by owner UID, from pods)
// are unavailable at now, using the ReplicaSet controller's own
// readiness and availability rules (replicaset.IsPodReady,
// replicaset.IsPodAvailable). Pods that have succeeded or failed are
// skipped, as the ReplicaSet controller skips them. Missing is
// spec.replicas minus the active pods found. Neither argument is modified.
func ClassifyPods(rs *appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) PodCauses {
	var c PodCauses
	if rs == nil {
		return c
	}
	active := int32(0)
	for _, p := range controlledBy(rs.UID, pods) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp != nil {
			c.Terminating++
			continue
		}
		active++
		if replicaset.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
			continue
		}
		switch {
		case unscheduled(p):
			c.Unscheduled++
		case waitingFor(p, "ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
			c.ImagePull++
		case waitingFor(p, "CrashLoopBackOff") || (restarts(p) > 0 && !replicaset.IsPodReady(p)):
			c.CrashLooping++
		case replicaset.IsPodReady(p):
			c.MinReadySeconds++
		default:
			c.NotReady++
		}
	}
	if want := replicas(rs.Spec.Replicas); want > active {
		c.Missing = want - active
	}
	return c
}

func controlledBy(uid types.UID, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p == nil {
			continue
		}
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.UID == uid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func unscheduled(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

func waitingFor(p *corev1.Pod, reasons ...string) bool {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			for _, r := range reasons {
				if w.Reason == r {
					return true
				}
			}
		}
	}
	return false
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
