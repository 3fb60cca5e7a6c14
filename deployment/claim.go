package deployment

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/validate"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// controllerKind is the GroupVersionKind of the owner references the
// controller writes.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// claim decides which ReplicaSets of the namespace the Deployment owns
// (upstream ReplicaSetControllerRefManager.ClaimReplicaSets, as a pure
// decision). It emits adopt and release patches and leaves s.rss holding
// the claimed ReplicaSets in creation order, adopted ones carrying the new
// controller reference so later writes keep it.
//
//   - controlled by another owner: ignored;
//   - ours and matching: claimed, even while the Deployment is deleted;
//   - ours and not matching: released, unless the Deployment is being
//     deleted;
//   - orphan, matching, not being deleted, same namespace, Deployment not
//     being deleted: adopted.
//
// The shell must re-check, with a live read, that the Deployment still
// exists with the same UID and is not being deleted before it applies an
// adoption (upstream RecheckDeletionTimestamp); [Reconciler] does.
func (s *syncer) claim() error {
	d := s.d
	sel, err := newSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
	}
	if tmpl := d.Spec.Template.Labels; len(tmpl) == 0 || !sel.matches(tmpl) {
		// The rule of both controllers (see internal/validate): the API
		// server never stores such a Deployment, but a custom workload's
		// spec reaches Sync unvalidated, and the ReplicaSet controller
		// would refuse the ReplicaSet planned from it.
		if err := validate.Selector("Deployment", d, d.Spec.Selector, tmpl, nil); err != nil {
			return reconcile.Terminal(fmt.Errorf("deployment: %w", err))
		}
	}
	deleting := d.DeletionTimestamp != nil
	claimed := make([]*appsv1.ReplicaSet, 0, len(s.namespace))
	for _, rs := range s.namespace {
		if rs == nil {
			continue
		}
		match := sel.matches(rs.Labels)
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
			switch {
			case ref.UID != d.UID:
			case match:
				claimed = append(claimed, rs)
			case !deleting:
				s.emit(ReleaseReplicaSet{Key: keyOf(rs), UID: rs.UID, Patch: releasePatch(d, rs)})
			}
			continue
		}
		if deleting || !match || rs.DeletionTimestamp != nil || (d.Namespace != "" && d.Namespace != rs.Namespace) {
			continue
		}
		s.emit(AdoptReplicaSet{Key: keyOf(rs), UID: rs.UID, Patch: adoptPatch(d, rs)})
		adopted := rs.DeepCopy()
		adopted.OwnerReferences = append(adopted.OwnerReferences, *metav1.NewControllerRef(d, controllerKind))
		claimed = append(claimed, adopted)
	}
	// The list is ours: sort it in place (upstream's order: creation time,
	// then name).
	slices.SortFunc(claimed, func(a, b *appsv1.ReplicaSet) int {
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return strings.Compare(a.Name, b.Name)
		}
		if a.CreationTimestamp.Before(&b.CreationTimestamp) {
			return -1
		}
		return 1
	})
	s.rss = claimed
	s.touch()
	return nil
}

// isSelectingAll reports whether the selector is the non-nil empty
// selector, which upstream refuses (reflect.DeepEqual with
// &metav1.LabelSelector{}, so an empty but non-nil map does not count).
func isSelectingAll(sel *metav1.LabelSelector) bool {
	return sel != nil && sel.MatchLabels == nil && sel.MatchExpressions == nil
}

func keyOf(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// KeyOf returns the namespace/name of a Deployment; the zero key for nil.
func KeyOf(d *appsv1.Deployment) types.NamespacedName {
	if d == nil {
		return types.NamespacedName{}
	}
	return keyOf(d)
}

type patchOwnerRef struct {
	APIVersion         string    `json:"apiVersion"`
	Kind               string    `json:"kind"`
	Name               string    `json:"name"`
	UID                types.UID `json:"uid"`
	Controller         bool      `json:"controller"`
	BlockOwnerDeletion bool      `json:"blockOwnerDeletion"`
}

type patchDeleteRef struct {
	Patch string    `json:"$patch"`
	UID   types.UID `json:"uid"`
}

// adoptPatch is upstream's adoption patch, byte for byte:
// {"metadata":{"ownerReferences":[{…}],"uid":"<rs uid>"}}.
func adoptPatch(d *appsv1.Deployment, rs *appsv1.ReplicaSet) []byte {
	type meta struct {
		OwnerReferences []patchOwnerRef `json:"ownerReferences"`
		UID             types.UID       `json:"uid"`
	}
	p := struct {
		Metadata meta `json:"metadata"`
	}{meta{
		OwnerReferences: []patchOwnerRef{{
			APIVersion: controllerKind.GroupVersion().String(), Kind: controllerKind.Kind,
			Name: d.Name, UID: d.UID, Controller: true, BlockOwnerDeletion: true,
		}},
		UID: rs.UID,
	}}
	return mustJSON(p)
}

// releasePatch is upstream's release patch:
// {"metadata":{"uid":"<rs uid>","ownerReferences":[{"$patch":"delete","uid":"<d uid>"}]}}.
func releasePatch(d *appsv1.Deployment, rs *appsv1.ReplicaSet) []byte {
	type meta struct {
		UID             types.UID        `json:"uid"`
		OwnerReferences []patchDeleteRef `json:"ownerReferences"`
	}
	p := struct {
		Metadata meta `json:"metadata"`
	}{meta{UID: rs.UID, OwnerReferences: []patchDeleteRef{{Patch: "delete", UID: d.UID}}}}
	return mustJSON(p)
}

// mustJSON marshals values whose types cannot fail to marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("deployment: marshalling a patch: %v", err))
	}
	return b
}
