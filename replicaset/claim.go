package replicaset

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Verdict is what a ReplicaSet does about one pod when it claims pods.
type Verdict int

const (
	// Ignore: the pod is not ours and stays that way (owned by another
	// controller, not matching, being deleted, inactive, ...).
	Ignore Verdict = iota
	// Own: the pod is already ours and matches; nothing to write.
	Own
	// Adopt: an orphan that matches; patch it with [AdoptPatch]. It is ours
	// once the patch succeeds.
	Adopt
	// Release: ours but no longer matching; patch it with [ReleasePatch].
	// It is not ours either way.
	Release
)

func (v Verdict) String() string {
	switch v {
	case Own:
		return "own"
	case Adopt:
		return "adopt"
	case Release:
		return "release"
	}
	return "ignore"
}

// Claim is the verdict for one pod.
type Claim struct {
	Pod     *corev1.Pod
	Verdict Verdict
}

// ClaimPods returns one [Claim] per pod of pods that needs a write or is
// already owned, in input order; pods with an [Ignore] verdict are left
// out. Inactive pods (terminal or being deleted) are never adopted or
// released, as upstream only ever claims active pods. The claimed set after
// the writes is the Own pods plus the Adopt pods whose patch succeeded, in
// this order (upstream PodControllerRefManager.ClaimPods over
// FilterActivePods). A nil rs, a nil selector or a nil pod is an error.
func ClaimPods(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]Claim, error) {
	if err := checkRS("ClaimPods", rs); err != nil {
		return nil, err
	}
	if err := checkSelector("ClaimPods", selector); err != nil {
		return nil, err
	}
	if err := checkPods("ClaimPods", "pods", pods); err != nil {
		return nil, err
	}
	var out []Claim
	for _, p := range pods {
		if !IsPodActive(p) {
			continue
		}
		if v := ClaimVerdict(rs, selector, p); v != Ignore {
			out = append(out, Claim{Pod: p, Verdict: v})
		}
	}
	return out, nil
}

// ClaimVerdict decides what rs does about pod, whose labels are matched
// against selector (upstream BaseControllerRefManager.ClaimObject, minus
// the writes):
//
//   - controlled by another UID: Ignore;
//   - controlled by rs and matching: Own, even while rs is being deleted;
//   - controlled by rs, not matching: Release, or Ignore while rs is being
//     deleted;
//   - an orphan: Adopt if rs is not being deleted, the pod matches, the pod
//     is not being deleted and rs's namespace is empty or the pod's;
//     otherwise Ignore.
//
// With a nil rs, selector or pod there is nothing to claim: Ignore.
func ClaimVerdict(rs *appsv1.ReplicaSet, selector labels.Selector, pod *corev1.Pod) Verdict {
	if rs == nil || selector == nil || pod == nil {
		return Ignore
	}
	return claimVerdict(rs, pod, metav1.GetControllerOfNoCopy(pod), selector.Matches(labels.Set(pod.Labels)))
}

// claimVerdict is ClaimVerdict with pod's controller reference, ref, already
// looked up, and whether the pod matches the selector.
func claimVerdict(rs *appsv1.ReplicaSet, pod *corev1.Pod, ref *metav1.OwnerReference, match bool) Verdict {
	if ref != nil {
		switch {
		case ref.UID != rs.UID:
			return Ignore
		case match:
			return Own
		case rs.DeletionTimestamp != nil:
			return Ignore
		}
		return Release
	}
	if rs.DeletionTimestamp != nil || !match || pod.DeletionTimestamp != nil {
		return Ignore
	}
	if rs.Namespace != "" && rs.Namespace != pod.Namespace {
		return Ignore
	}
	return Adopt
}

// controllerOf is metav1.GetControllerOfNoCopy for a pod, without going
// through the metav1.Object interface.
func controllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	for i := range pod.OwnerReferences {
		if r := &pod.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

// isOwnedOrOrphan reports whether pod belongs to the set the ReplicaSet
// controller looks at for rs: pods whose controller reference names rs
// (kind ReplicaSet, its name and UID) and pods without a controller, in
// rs's namespace (upstream FilterPodsByOwner with includeOrphanedPods).
// False when rs or pod is nil.
func isOwnedOrOrphan(rs *appsv1.ReplicaSet, pod *corev1.Pod) bool {
	if rs == nil || pod == nil {
		return false
	}
	return ownedOrOrphan(rs, pod, metav1.GetControllerOfNoCopy(pod))
}

func ownedOrOrphan(rs *appsv1.ReplicaSet, pod *corev1.Pod, ref *metav1.OwnerReference) bool {
	return pod.Namespace == rs.Namespace &&
		(ref == nil || (ref.UID == rs.UID && ref.Name == rs.Name && ref.Kind == controllerKindName))
}

// IsClaimed reports whether pod is controlled by rs and matches selector
// (the per-pod test of upstream FilterClaimedPods, used for terminating
// pods, which are never adopted). False when an argument is nil.
func IsClaimed(rs *appsv1.ReplicaSet, selector labels.Selector, pod *corev1.Pod) bool {
	if rs == nil || selector == nil || pod == nil {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.UID == rs.UID && selector.Matches(labels.Set(pod.Labels))
}

// AdoptPatch returns the strategic merge patch that makes rs the controller
// of pod, byte for byte as upstream: it sets metadata.ownerReferences to
// rs's controller reference, with metadata.uid as a precondition on the
// pod's UID (upstream ownerRefControllerPatch). A nil rs or pod is an
// error.
func AdoptPatch(rs *appsv1.ReplicaSet, pod *corev1.Pod) ([]byte, error) {
	if err := checkArgs("AdoptPatch", rs, pod); err != nil {
		return nil, err
	}
	return json.Marshal(adoptPatch{Metadata: adoptMeta{
		OwnerReferences: []metav1.OwnerReference{*newControllerRef(rs)},
		UID:             pod.UID,
	}})
}

// ReleasePatch returns the strategic merge patch that removes rs's owner
// reference from pod ("$patch": "delete" keyed by the owner UID), with the
// pod's UID as a precondition, byte for byte as upstream
// (GenerateDeleteOwnerRefStrategicMergeBytes). A nil rs or pod is an
// error.
func ReleasePatch(rs *appsv1.ReplicaSet, pod *corev1.Pod) ([]byte, error) {
	if err := checkArgs("ReleasePatch", rs, pod); err != nil {
		return nil, err
	}
	return json.Marshal(releasePatch{Metadata: releaseMeta{
		UID:             pod.UID,
		OwnerReferences: []map[string]string{{"$patch": "delete", "uid": string(rs.UID)}},
	}})
}

type adoptPatch struct {
	Metadata adoptMeta `json:"metadata"`
}

type adoptMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	UID             types.UID               `json:"uid"`
}

type releasePatch struct {
	Metadata releaseMeta `json:"metadata"`
}

type releaseMeta struct {
	UID             types.UID           `json:"uid"`
	OwnerReferences []map[string]string `json:"ownerReferences"`
}

// podReplicaSets returns the ReplicaSets of rss in pod's namespace whose
// selector matches pod's labels; ReplicaSets with an invalid or empty
// selector match nothing, and a pod without labels matches no ReplicaSet
// (upstream ReplicaSetLister.GetPodReplicaSets). The result is a new slice.
// A nil pod matches nothing; nil entries of rss are skipped.
func podReplicaSets(pod *corev1.Pod, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if pod == nil || len(pod.Labels) == 0 {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs == nil || rs.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, rs)
	}
	return out
}
