package replicaset

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The replacement backoff for pods the kubelet rejects (a deliberate
// difference from upstream, kubernetes#72593). A pod the kubelet refuses
// at admission (it does not fit the node: OutOfcpu; it does not match the
// node: NodeAffinity; an admission plugin failed:
// UnexpectedAdmissionError, SysctlForbidden, ...) ends in phase Failed
// without ever running, and upstream replaces it at once; when every
// replacement is refused too (a pod bound to a node that cannot take it, a
// sysctl no node allows) it creates pods as fast as the kubelet rejects
// them, thousands an hour, until the pod garbage collector's threshold
// (12,500 terminated pods). ctrlkit replaces the first rejected pod at once,
// as upstream, and the next ones after a delay that doubles with each
// rejection in the last [RejectionWindow], one pod at a time.
const (
	// RejectionBackoffBase is the delay after the second rejection in
	// the window; it doubles with each further one.
	RejectionBackoffBase = 10 * time.Second
	// RejectionBackoffMax caps the delay: under rejections that never
	// stop, a ReplicaSet creates at most one pod per RejectionBackoffMax.
	RejectionBackoffMax = 5 * time.Minute
	// RejectionWindow is how far back rejections count.
	RejectionWindow = 30 * time.Minute
	// ReasonRejectedPodsBackoff is the reason of the Warning event a
	// ReplicaSet gets when it holds back the replacement of rejected pods.
	ReasonRejectedPodsBackoff = "RejectedPodsBackoff"
)

// isPodRejected reports whether p was refused by its kubelet at admission
// (or failed before any of its containers ran): phase Failed, and no
// container that ever ran or was terminated.
func isPodRejected(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase != corev1.PodFailed {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				return false
			}
		}
	}
	return true
}

// rejectedAt is when p was rejected: its start time (the kubelet's
// admission), else its creation.
func rejectedAt(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil && !p.Status.StartTime.IsZero() {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// Backoff is the decision on replacing rejected pods at one sync.
type Backoff struct {
	// Rejected is the number of pods rejected in the last
	// [RejectionWindow]; Latest is the most recent of them (nil if none).
	Rejected int
	Latest   *corev1.Pod
	// Wait is how long replacements are held back; 0 lets them go.
	Wait time.Duration
	// Probe limits the creations of this sync to one pod: rejections are
	// recent, and each replacement may be rejected in turn.
	Probe bool
}

// RejectionBackoff decides, at now, how the replacements of the failed
// pods of a ReplicaSet are paced: with n pods rejected (see
// isPodRejected) in the last [RejectionWindow], none is held back while
// n ≤ 1; from n = 2 on the next creation waits [RejectionBackoffBase] ×
// 2^(n−2), at most [RejectionBackoffMax], after the latest rejection, and
// creates one pod only. Pods that are not rejected (evicted, say, after
// running) do not count. failed is not modified; nil entries are skipped.
func RejectionBackoff(failed []*corev1.Pod, now time.Time) Backoff {
	var b Backoff
	var latest time.Time
	for _, p := range failed {
		if !isPodRejected(p) {
			continue
		}
		at := rejectedAt(p)
		if now.Sub(at) > RejectionWindow {
			continue
		}
		b.Rejected++
		if b.Latest == nil || at.After(latest) || at.Equal(latest) && p.Name > b.Latest.Name {
			b.Latest, latest = p, at
		}
	}
	if b.Rejected <= 1 {
		return b
	}
	delay := RejectionBackoffMax
	if shift := b.Rejected - 2; shift < 16 {
		delay = min(RejectionBackoffBase<<shift, RejectionBackoffMax)
	}
	b.Probe = true
	b.Wait = max(latest.Add(delay).Sub(now), 0)
	return b
}

// event is the Warning event of a sync that holds replacements back.
func (b Backoff) event() Event {
	p := b.Latest
	return Event{Type: corev1.EventTypeWarning, Reason: ReasonRejectedPodsBackoff, Message: fmt.Sprintf(
		"%d pods rejected by the kubelet in the last %v, the latest %s on node %q: %s: %s; next replacement in %v",
		b.Rejected, RejectionWindow, p.Name, p.Spec.NodeName, p.Status.Reason, p.Status.Message, b.Wait.Round(time.Second))}
}
