package replicaset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Hooks for the external tests of unexported helpers.

// ClassifyLabels compiles sel as the Reconciler does, then returns whether
// l matches it, whether l holds every label of tpl, and whether the
// matcher found tpl alone enough to settle sel.
func ClassifyLabels(sel labels.Selector, tpl, l map[string]string) (match, labeled, implied bool) {
	m := compileSelector(sel)
	t := newPodLabelTest(&m, tpl)
	match, labeled = t.test(l)
	return match, labeled, t.implied
}

// MatchCompiled compiles sel as the Reconciler does and matches l with it.
func MatchCompiled(sel labels.Selector, l map[string]string) bool {
	m := compileSelector(sel)
	return m.matches(l)
}

// CollectPods keeps the pods of kept, in order, with a collector sharing
// first, and returns the result and whether it still shares first.
func CollectPods(first []*corev1.Pod, size int, kept []*corev1.Pod) ([]*corev1.Pod, bool) {
	c := newPodCollector(first, size)
	for _, p := range kept {
		c.keep(p)
	}
	return c.pods, c.shared
}

// SetMemoMinPods sets the number of listed pods from which the Reconciler
// remembers what it learnt of them, and returns a func that restores it.
func SetMemoMinPods(n int) (restore func()) {
	old := memoMinPods
	memoMinPods = n
	return func() { memoMinPods = old }
}

// Unexported decision helpers, for the external tests.
var (
	AvailabilityRequeue       = availabilityRequeue
	CalculateStatusWith       = calculateStatusWith
	NeedsStatusUpdate         = needsStatusUpdate
	NextAvailabilityCheck     = nextAvailabilityCheck
	StatusToWrite             = statusToWrite
	IsOwnedOrOrphan           = isOwnedOrOrphan
	PodReplicaSets            = podReplicaSets
	NewControllerRef          = newControllerRef
	SlowStartInitialBatchSize = slowStartInitialBatchSize
	IsPodRejected             = isPodRejected
)
