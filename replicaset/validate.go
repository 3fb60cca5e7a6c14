package replicaset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Bad input. The functions that decide something (ManageReplicas,
// CalculateStatus, ClaimPods, PodsToDelete, RankForDeletion,
// CoLocationRanks, AdoptPatch, ReleasePatch, NewPod, Apply) return an
// error naming the argument for a nil ReplicaSet, a nil selector or a nil
// entry in a pod list; they never panic, and never decide from a
// substitute. Predicates and small helpers give a documented answer
// instead (a nil pod is not active, ready, available, terminating or
// claimed, and costs 0).

// checkRS returns an error for a nil ReplicaSet.
func checkRS(fn string, rs *appsv1.ReplicaSet) error {
	if rs == nil {
		return fmt.Errorf("replicaset: %s: the ReplicaSet is nil", fn)
	}
	return nil
}

// checkPods returns an error naming the first nil entry of pods.
func checkPods(fn, what string, pods []*corev1.Pod) error {
	for i, p := range pods {
		if p == nil {
			return fmt.Errorf("replicaset: %s: %s[%d] is nil", fn, what, i)
		}
	}
	return nil
}

// checkSelector returns an error for a nil selector.
func checkSelector(fn string, sel labels.Selector) error {
	if sel == nil {
		return fmt.Errorf("replicaset: %s: the selector is nil", fn)
	}
	return nil
}

// checkArgs returns an error for a nil ReplicaSet or pod.
func checkArgs(fn string, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	if err := checkRS(fn, rs); err != nil {
		return err
	}
	if pod == nil {
		return fmt.Errorf("replicaset: %s: the pod is nil", fn)
	}
	return nil
}
