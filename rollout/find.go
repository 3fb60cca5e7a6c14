package rollout

import (
	"maps"
	"reflect"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EqualIgnoreHash reports whether two pod templates are semantically equal
// once the pod-template-hash label is ignored (upstream
// deployment/util.EqualIgnoreHash). Neither template is modified. Two nil
// templates are equal; a nil and a non-nil one are not.
//
// It copies neither template. Templates identical under reflect.DeepEqual
// once the hash label is ignored are semantically equal too, and most
// ReplicaSets match their Deployment exactly: that comparison goes first,
// field by field, and the semantic one only runs when it fails.
func EqualIgnoreHash(t1, t2 *corev1.PodTemplateSpec) bool {
	if t1 == nil || t2 == nil {
		return t1 == t2
	}
	if !labelsEqualIgnoreHash(t1.Labels, t2.Labels) {
		return false
	}
	if metaEqualExceptLabels(&t1.ObjectMeta, &t2.ObjectMeta) && reflect.DeepEqual(&t1.Spec, &t2.Spec) {
		return true
	}
	c1, c2 := *t1, *t2
	c1.Labels, c2.Labels = nil, nil
	return apiequality.Semantic.DeepEqual(&c1, &c2)
}

// labelsEqualIgnoreHash compares two label maps without the
// pod-template-hash key, as a semantic comparison does (nil and empty
// are equal).
func labelsEqualIgnoreHash(a, b map[string]string) bool {
	n := 0
	for k, v := range a {
		if k == HashLabel {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	m := len(b)
	if _, ok := b[HashLabel]; ok {
		m--
	}
	return n == m
}

// metaEqualExceptLabels is reflect.DeepEqual over every field of two
// ObjectMetas but Labels, field by field (TestObjectMetaFields fails if
// apimachinery adds one).
func metaEqualExceptLabels(a, b *metav1.ObjectMeta) bool {
	return a.Name == b.Name && a.GenerateName == b.GenerateName && a.Namespace == b.Namespace &&
		a.SelfLink == b.SelfLink && a.UID == b.UID && a.ResourceVersion == b.ResourceVersion &&
		a.Generation == b.Generation && timeDeepEqual(&a.CreationTimestamp, &b.CreationTimestamp) &&
		(a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil) &&
		(a.DeletionTimestamp == nil || timeDeepEqual(a.DeletionTimestamp, b.DeletionTimestamp)) &&
		(a.DeletionGracePeriodSeconds == nil) == (b.DeletionGracePeriodSeconds == nil) &&
		(a.DeletionGracePeriodSeconds == nil || *a.DeletionGracePeriodSeconds == *b.DeletionGracePeriodSeconds) &&
		(a.Annotations == nil) == (b.Annotations == nil) && maps.Equal(a.Annotations, b.Annotations) &&
		(a.Finalizers == nil) == (b.Finalizers == nil) && slices.Equal(a.Finalizers, b.Finalizers) &&
		(len(a.OwnerReferences) == 0 && len(b.OwnerReferences) == 0 && (a.OwnerReferences == nil) == (b.OwnerReferences == nil) ||
			reflect.DeepEqual(&a.OwnerReferences, &b.OwnerReferences)) &&
		(len(a.ManagedFields) == 0 && len(b.ManagedFields) == 0 && (a.ManagedFields == nil) == (b.ManagedFields == nil) ||
			reflect.DeepEqual(&a.ManagedFields, &b.ManagedFields))
}

// FindNewReplicaSet returns the ReplicaSet whose template matches d's
// (ignoring the hash label), or nil (upstream
// deployment/util.FindNewReplicaSet). When several match, the oldest wins
// (creation timestamp, then name), as upstream (kubernetes#40415). rss is
// not reordered; nil entries are skipped.
func FindNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if d == nil {
		return nil
	}
	for _, rs := range SortByCreationTimestamp(rss) {
		if rs != nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// FindOldReplicaSets splits off the old ReplicaSets of d (upstream
// deployment/util.FindOldReplicaSets): all holds every ReplicaSet except
// the new one (compared by UID, as upstream), and active the subset with
// spec.replicas ≠ 0. Both are in creation-timestamp order, because upstream
// sorts the list while looking for the new ReplicaSet. rss is not
// reordered; nil entries are skipped.
func FindOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (active, all []*appsv1.ReplicaSet) {
	sorted := SortByCreationTimestamp(rss)
	newRS := FindNewReplicaSet(d, sorted)
	for _, rs := range sorted {
		if rs == nil || (newRS != nil && rs.UID == newRS.UID) {
			continue
		}
		all = append(all, rs)
		if specReplicas(rs) != 0 {
			active = append(active, rs)
		}
	}
	return active, all
}

// FindActiveOrLatest returns the only active ReplicaSet among newRS and
// oldRSs; if none is active, newRS, or failing that the newest old one; and
// nil when several are active or there is nothing at all (upstream
// deployment/util.FindActiveOrLatest). oldRSs is not reordered (upstream
// reverse-sorts it in place).
func FindActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	olds := newestFirst(oldRSs)
	active := FilterActive(append(olds, newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return olds[0]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// newestFirst is a copy of rss in reverse creation order, sorted the way
// upstream's sort.Reverse(ReplicaSetsByCreationTimestamp) does. It has
// room for one more element.
func newestFirst(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, len(rss), len(rss)+1)
	copy(out, rss)
	sort.Sort(sort.Reverse(byCreation(out)))
	return out
}

// SetFromReplicaSetTemplate returns a copy of d whose pod template is
// template without the pod-template-hash label (upstream
// deployment/util.SetFromReplicaSetTemplate). Neither argument is modified.
func SetFromReplicaSetTemplate(d *appsv1.Deployment, template corev1.PodTemplateSpec) *appsv1.Deployment {
	out := d.DeepCopy()
	if out == nil {
		out = &appsv1.Deployment{}
	}
	t := template.DeepCopy()
	out.Spec.Template.ObjectMeta = t.ObjectMeta
	out.Spec.Template.Spec = t.Spec
	out.Spec.Template.Labels = cloneWithout(template.Labels, HashLabel)
	return out
}

// cloneWithout returns a copy of m without key, always a new non-nil map
// (upstream labelsutil.CloneAndRemoveLabel).
func cloneWithout(m map[string]string, key string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// cloneWith returns a copy of m with key=value added (upstream
// labelsutil.CloneAndAddLabel).
func cloneWith(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}
