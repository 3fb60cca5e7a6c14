package memcluster

import (
	"cmp"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Rejection is a kubelet's refusal to admit a pod: what the kubelet
// writes is phase Failed, status.reason Reason, status.message
// "Pod was rejected: " + Message, and a Warning event on the pod with the
// same reason and Message (kubelet rejectPod).
type Rejection struct {
	// Reason is the kubelet's reason. Those whose message the simulated
	// kubelet knows are OutOfcpu ("Node didn't have enough resource: cpu,
	// requested: 2500, used: 0, capacity: 2000": the pod's requests, at
	// least one more than the node has), OutOfmemory and OutOfpods (alike),
	// NodeAffinity ("Predicate NodeAffinity failed: node(s) didn't match
	// Pod's node affinity/selector") and UnexpectedAdmissionError (a device
	// plugin's allocation error); any other reason (SysctlForbidden, ...)
	// gets "Pod was rejected by the simulated kubelet".
	Reason string
	// Message says why, without the "Pod was rejected: " prefix the
	// status message has. Empty means the v1.37 kubelet's message for
	// Reason, as listed above.
	Message string
}

// RejectionReasonAnnotation, set on a pod (or a pod template) whose
// [FailureAnnotation] is [PodRejected], names the [Rejection.Reason];
// without it the kubelet rejects the pod with OutOfcpu.
const RejectionReasonAnnotation = "memcluster.ctrlkit.io/rejection-reason"

// The reasons whose messages kubeletMessage knows.
const (
	rejectOutOfCPU                 = "OutOfcpu"
	rejectOutOfMemory              = "OutOfmemory"
	rejectOutOfPods                = "OutOfpods"
	rejectNodeAffinity             = "NodeAffinity"
	rejectUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// nodeCPU and nodeMemory are the allocatable resources of a simulated
// node, as the kubelet's OutOf* messages report them.
const (
	nodeCPU    = 2000 // millicores
	nodeMemory = 4 << 30
	nodePods   = 110
)

// kubeletMessage is the message a v1.37 kubelet gives when it rejects pod
// for reason (see [Rejection.Reason]).
func kubeletMessage(reason string, pod *corev1.Pod) string {
	switch reason {
	case rejectOutOfCPU:
		return insufficient(corev1.ResourceCPU, max(requested(pod, corev1.ResourceCPU, true), nodeCPU+500), nodeCPU)
	case rejectOutOfMemory:
		return insufficient(corev1.ResourceMemory, max(requested(pod, corev1.ResourceMemory, false), nodeMemory+1<<20), nodeMemory)
	case rejectOutOfPods:
		return fmt.Sprintf("Node didn't have enough resource: %s, requested: 1, used: %d, capacity: %d", corev1.ResourcePods, nodePods, nodePods)
	case rejectNodeAffinity:
		return "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	case rejectUnexpectedAdmissionError:
		return "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/gpu, which is unexpected"
	default:
		return "Pod was rejected by the simulated kubelet"
	}
}

func insufficient(name corev1.ResourceName, requested, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: 0, capacity: %d", name, requested, capacity)
}

// requested sums the pod's container requests of name, in millicores if
// milli, else in units.
func requested(pod *corev1.Pod, name corev1.ResourceName, milli bool) int64 {
	var sum int64
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Requests[name]
		if !ok {
			continue
		}
		if milli {
			sum += q.MilliValue()
		} else {
			sum += q.Value()
		}
	}
	return sum
}

// rejectionOf is the rejection the kubelet gives p under behaviour b.
func rejectionOf(p *corev1.Pod, b PodBehavior) Rejection {
	r := b.Rejection
	if r.Reason == "" {
		r = Rejection{Reason: cmp.Or(p.Annotations[RejectionReasonAnnotation], rejectOutOfCPU)}
	}
	if r.Message == "" {
		r.Message = kubeletMessage(r.Reason, p)
	}
	return r
}

// rejectedStatus is the status a kubelet writes for a pod it refuses at
// admission (at): phase Failed, the reason, "Pod was rejected: " and the
// message, its start time and QoS class, and the pod's generation as
// observedGeneration (its status manager sets it on every status); the
// conditions the kubelet owns (PodScheduled, Ready, ...) are dropped,
// others kept, and no container status is reported (no container ever
// ran).
func rejectedStatus(p *corev1.Pod, r Rejection, at time.Time) corev1.PodStatus {
	s := corev1.PodStatus{
		Phase:              corev1.PodFailed,
		Reason:             r.Reason,
		Message:            "Pod was rejected: " + r.Message,
		QOSClass:           p.Status.QOSClass,
		StartTime:          ptrTo(metav1.NewTime(at)),
		ObservedGeneration: p.Generation,
	}
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
			corev1.PodReadyToStartContainers, corev1.PodResizeInProgress, corev1.PodResizePending:
		default:
			s.Conditions = append(s.Conditions, c)
		}
	}
	return s
}

// rejectionEventLocked records the kubelet's Warning event about the
// rejected pod p on node, as a core/v1 Event, if the cluster serves them
// (see addCoreKinds). The caller holds c.mu.
func (c *Cluster) rejectionEventLocked(p *corev1.Pod, r Rejection, node string, at time.Time) {
	res, ok := c.kinds[schema.GroupKind{Kind: "Event"}].(*Resource[*corev1.Event])
	if !ok {
		return
	}
	t := metav1.NewTime(at)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace,
			// client-go's recorder names an event after its object and the
			// time in nanoseconds, in hexadecimal.
			Name: fmt.Sprintf("%s.%x", p.Name, at.UnixNano()),
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1", ResourceVersion: p.ResourceVersion,
		},
		Reason:              r.Reason,
		Message:             r.Message,
		Source:              corev1.EventSource{Component: "kubelet", Host: node},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		Type:                corev1.EventTypeWarning,
		ReportingController: "kubelet",
		ReportingInstance:   node,
	}
	if _, err := res.createLocked(ev, p.Namespace, author{manager: kubeletManager}); err != nil { // the kubelet's event recorder
		// A second rejection of the same pod at the same instant: the
		// first event says it all.
		return
	}
}
