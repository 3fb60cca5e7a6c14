package replicaset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/internal/validate"
)

// Bad input. The functions that decide something (ManageReplicas,
// CalculateStatus, ClaimPods, PodsToDelete, RankForDeletion,
// CoLocationRanks, AdoptPatch, ReleasePatch, NewPod, WritePods) return an
// error naming the argument for a nil ReplicaSet, a nil selector or a nil
// entry in a pod list; they never panic, and never decide from a
// substitute. ManageReplicas also refuses a ReplicaSet the API server
// would have rejected, rather than plan pods it cannot create. Predicates and small helpers give a documented answer
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

// checkSpec returns an error for a ReplicaSet the API server rejects for
// its selector or template labels (the rule of both controllers, see
// internal/validate): a nil, empty or invalid selector, or one that does
// not match the template's labels; a template without labels, from which
// no pod can be created, wraps [ErrNoLabels]. The error names rs, which is
// not nil.
func checkSpec(fn string, rs *appsv1.ReplicaSet) error {
	if err := validate.Selector("ReplicaSet", rs, rs.Spec.Selector, rs.Spec.Template.Labels, nil); err != nil {
		return fmt.Errorf("replicaset: %s: %w", fn, err)
	}
	return nil
}

// specProblem is checkSpec with the selector already compiled (nil when
// rs has none, or an empty one), for a sync: it allocates nothing when
// the spec is sound.
func specProblem(rs *appsv1.ReplicaSet, selector *labelMatcher) error {
	var m validate.Matcher
	if selector != nil {
		m = selector
	}
	return validate.Selector("ReplicaSet", rs, rs.Spec.Selector, rs.Spec.Template.Labels, m)
}
