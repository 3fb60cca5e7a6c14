package rollout

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
)

// maxNameLength is the DNS-1123 subdomain limit on object names.
const maxNameLength = 253

// ComputeHash returns the pod-template-hash of template, salted with
// collisionCount when it is non-nil (upstream controller.ComputeHash). The
// value is byte-for-byte upstream's, computed the same way:
//
//   - FNV-32a over dump.ForHash(*template) (the value, not the pointer);
//   - then, with a collision count, 8 bytes: the count as little-endian
//     uint32 followed by 4 zero bytes;
//   - the decimal Sum32 run through rand.SafeEncodeString.
//
// Hash the Deployment's template before the hash label is added. The hash
// depends on the PodTemplateSpec struct layout of the k8s.io/api version
// compiled in, which is why ReplicaSets are matched with [EqualIgnoreHash],
// not by hash. A nil template hashes as the zero template (upstream
// panics). Rendering the template is the expensive part (tens of
// microseconds); [NewReplicaSet] remembers the hash of a Deployment object
// it has already hashed.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	if template == nil {
		template = &corev1.PodTemplateSpec{}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(dump.ForHash(*template))) // a hash.Hash never fails
	if collisionCount != nil {
		var b [8]byte
		binary.LittleEndian.PutUint32(b[:4], uint32(*collisionCount))
		_, _ = h.Write(b[:])
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// ReplicaSetName is the name of the ReplicaSet for a Deployment called
// deploymentName with the given hash: name + "-" + hash, the Deployment's
// name cut so the result fits in 253 characters (upstream
// generateReplicaSetName, v1.34+). A hash so long that no character of the
// name would fit is appended untruncated, as upstream.
func ReplicaSetName(deploymentName, hash string) string {
	room := maxNameLength - 1 - len(hash)
	if len(deploymentName) > room && room > 0 {
		deploymentName = deploymentName[:room]
	}
	return deploymentName + "-" + hash
}

// NewReplicaSet builds the ReplicaSet the controller creates when d has
// no new ReplicaSet yet (the create branch of upstream getNewReplicaSet).
// oldRSs must be all of d's other ReplicaSets (see [FindOldReplicaSets]).
//
//   - hash = ComputeHash(d's template, status.collisionCount);
//   - name = ReplicaSetName(d.Name, hash), namespace = d's;
//   - labels, template labels: d's template labels + pod-template-hash;
//   - selector: a copy of d's selector with pod-template-hash added to
//     matchLabels;
//   - owner: a controller reference to d (controller and
//     blockOwnerDeletion set);
//   - minReadySeconds: d's;
//   - replicas: [NewRSNewReplicas] with the new ReplicaSet counted at 0;
//   - annotations: [SetNewReplicaSetAnnotations] with revision
//     MaxRevision(oldRSs)+1 and exists=false.
//
// An error from NewRSNewReplicas is returned as upstream returns it (no
// ReplicaSet). Tolerated problems (unparseable old revisions, a malformed
// maxUnavailable) come back with the ReplicaSet, wrapping
// [ErrIgnoredByUpstream]. Unlike upstream, the labels of the object and of
// its template are separate maps.
func NewReplicaSet(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if d == nil {
		return nil, errors.New("rollout: nil Deployment")
	}
	hash := templateHash(d)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ReplicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			Labels:          cloneWith(d.Spec.Template.Labels, HashLabel, hash),
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selectorWith(d.Spec.Selector, HashLabel, hash),
		},
	}
	src := d.Spec.Template // shallow: its labels are not copied twice
	src.Labels = nil
	src.DeepCopyInto(&rs.Spec.Template)
	rs.Spec.Template.Labels = cloneWith(d.Spec.Template.Labels, HashLabel, hash)
	maxOld, revErr := MaxRevision(oldRSs)
	all := make([]*appsv1.ReplicaSet, 0, len(oldRSs)+1)
	all = append(append(all, oldRSs...), rs)
	n, err := NewRSNewReplicas(d, all, rs)
	if fatal(err) {
		return nil, err
	}
	*rs.Spec.Replicas = n
	_, annErr := setNewReplicaSetAnnotations(d, rs, strconv.FormatInt(maxOld+1, 10), false, MaxRevisionHistoryLength) // rs is ours: no copy
	return rs, joinIgnored(revErr, err, annErr)
}

// selectorWith copies sel and adds key=value to its matchLabels (upstream
// labelsutil.CloneSelectorAndAddLabel). A nil selector is read as empty.
func selectorWith(sel *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	out := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	if sel == nil {
		out.MatchLabels[key] = value
		return out
	}
	for k, v := range sel.MatchLabels {
		out.MatchLabels[k] = v
	}
	out.MatchLabels[key] = value
	if sel.MatchExpressions != nil {
		out.MatchExpressions = make([]metav1.LabelSelectorRequirement, len(sel.MatchExpressions))
		for i, me := range sel.MatchExpressions {
			out.MatchExpressions[i] = metav1.LabelSelectorRequirement{Key: me.Key, Operator: me.Operator}
			if me.Values != nil {
				out.MatchExpressions[i].Values = append([]string(nil), me.Values...)
			}
		}
	}
	return out
}

// IsHashCollision reports whether existing, the object already holding
// the name [NewReplicaSet] chose, is someone else's: it is not controlled
// by d (by UID) or its template differs from d's (the AlreadyExists branch
// of upstream getNewReplicaSet). When true, the caller bumps
// status.collisionCount (see [BumpCollisionCount]) and retries; when false,
// existing is d's new ReplicaSet.
func IsHashCollision(d *appsv1.Deployment, existing *appsv1.ReplicaSet) bool {
	if d == nil || existing == nil {
		return true
	}
	ref := metav1.GetControllerOf(existing)
	return ref == nil || ref.UID != d.UID || !EqualIgnoreHash(&d.Spec.Template, &existing.Spec.Template)
}

// BumpCollisionCount returns a copy of status with collisionCount raised by
// one (nil counts as 0), as upstream does after a hash collision.
func BumpCollisionCount(status appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	out := *status.DeepCopy()
	n := int32Of(out.CollisionCount) + 1
	out.CollisionCount = &n
	return out
}
