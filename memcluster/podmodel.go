package memcluster

import (
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodFailure is a way a simulated pod can misbehave.
type PodFailure string

// The failures the kubelet simulates.
const (
	// PodHealthy pods start, become Ready and stay Ready.
	PodHealthy PodFailure = ""
	// PodCrashLoop pods run for CrashAfter, exit with code 1 and are
	// restarted after the kubelet's back-off (10s doubling, capped at 5m);
	// restartCount grows and they are never Ready.
	PodCrashLoop PodFailure = "CrashLoop"
	// PodBadImage pods never start: phase Pending, containers waiting with
	// reason ImagePullBackOff.
	PodBadImage PodFailure = "BadImage"
	// PodNeverReady pods run (phase Running, containers started) but their
	// readiness probe never passes.
	PodNeverReady PodFailure = "NeverReady"
	// PodRejected pods are refused by the kubelet when it admits them, as
	// a real kubelet refuses a pod that does not fit the node (OutOfcpu),
	// does not match its labels (NodeAffinity) or fails an admission
	// plugin (UnexpectedAdmissionError): at once, phase Failed with the
	// rejection's reason and message, and a Warning event on the pod.
	// [PodBehavior.Rejection] (or [RejectionReasonAnnotation]) says
	// which; the default is OutOfcpu.
	PodRejected PodFailure = "Rejected"
)

// FailureAnnotation, set on a pod (or a pod template) to a [PodFailure],
// overrides the kubelet's model for that pod. It is read when the kubelet
// first schedules the pod.
const FailureAnnotation = "memcluster.ctrlkit.io/failure"

// PodBehavior is what the kubelet does with one pod. Every delay is in
// cluster time.
type PodBehavior struct {
	// StartDelay runs from scheduling to running containers (pulling and
	// starting them). The pod is Pending meanwhile.
	StartDelay time.Duration
	// ReadyDelay runs from running containers to the Ready condition.
	ReadyDelay time.Duration
	// ShutdownDelay is how long containers take to stop once the pod is
	// deleted. Zero, or anything longer than the grace period, means the
	// pod lingers for its whole grace period.
	ShutdownDelay time.Duration
	// Failure makes the pod misbehave.
	Failure PodFailure
	// CrashAfter is how long a crash-looping container runs before it
	// exits. Zero means 5s.
	CrashAfter time.Duration
	// Rejection is the kubelet's rejection of a [PodRejected] pod; the
	// zero value rejects it for the pod's [RejectionReasonAnnotation], or
	// OutOfcpu, with the kubelet's message.
	Rejection Rejection
}

// PodModel decides the behaviour of a pod when the kubelet first schedules
// it. rnd is the kubelet's seeded source: draw from it, never from a global
// one, to keep simulations reproducible.
type PodModel func(pod *corev1.Pod, rnd *rand.Rand) PodBehavior

// FixedModel gives every pod behaviour b.
func FixedModel(b PodBehavior) PodModel {
	return func(*corev1.Pod, *rand.Rand) PodBehavior { return b }
}

// RandomModel gives every pod behaviour b with a ReadyDelay drawn
// uniformly from [minReady, maxReady].
func RandomModel(b PodBehavior, minReady, maxReady time.Duration) PodModel {
	return func(_ *corev1.Pod, rnd *rand.Rand) PodBehavior {
		b := b
		b.ReadyDelay = minReady
		if maxReady > minReady {
			b.ReadyDelay += time.Duration(rnd.Int64N(int64(maxReady-minReady) + 1))
		}
		return b
	}
}

// ImageModel picks a behaviour by the image of the pod's first container,
// and falls back to fallback (or [DefaultPodBehavior] when nil) for other images.
func ImageModel(byImage map[string]PodBehavior, fallback PodModel) PodModel {
	return func(p *corev1.Pod, rnd *rand.Rand) PodBehavior {
		if len(p.Spec.Containers) > 0 {
			if b, ok := byImage[p.Spec.Containers[0].Image]; ok {
				return b
			}
		}
		if fallback == nil {
			return DefaultPodBehavior()
		}
		return fallback(p, rnd)
	}
}

// DefaultPodBehavior is the behaviour of a kubelet configured without a
// model: containers run 1s after scheduling and are Ready 1s later;
// deleted pods linger for their whole grace period.
func DefaultPodBehavior() PodBehavior {
	return PodBehavior{StartDelay: time.Second, ReadyDelay: time.Second}
}
