package rollout

import (
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The orderings below are upstream's sort.Interface types. They are
// applied with sort.Sort (not a stable sort) to a clone of the caller's
// slice, so ties and upstream's non-transitive revision order come out in
// exactly upstream's order. Nil entries compare as a zero ReplicaSet
// instead of panicking.

// creationLess is controller.ReplicaSetsByCreationTimestamp.Less.
func creationLess(a, b *appsv1.ReplicaSet) bool {
	ta, tb := creation(a), creation(b)
	if ta.Equal(&tb) {
		return name(a) < name(b)
	}
	return ta.Before(&tb)
}

func creation(rs *appsv1.ReplicaSet) metav1.Time {
	if rs == nil {
		return metav1.Time{}
	}
	return rs.CreationTimestamp
}

func name(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	return rs.Name
}

type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int           { return len(o) }
func (o byCreation) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool { return creationLess(o[i], o[j]) }

type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if si, sj := specReplicas(o[i]), specReplicas(o[j]); si != sj {
		return si > sj
	}
	return creationLess(o[i], o[j])
}

type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if si, sj := specReplicas(o[i]), specReplicas(o[j]); si != sj {
		return si > sj
	}
	return creationLess(o[j], o[i])
}

type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	ri, erri := Revision(o[i])
	rj, errj := Revision(o[j])
	if erri != nil || errj != nil || ri == rj {
		return creationLess(o[i], o[j])
	}
	return ri < rj
}

// SortByCreationTimestamp returns a copy of rss sorted oldest first, ties
// broken by name ascending (upstream controller.ReplicaSetsByCreationTimestamp).
func SortByCreationTimestamp(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	sort.Sort(byCreation(out))
	return out
}

// SortBySizeOlder returns a copy of rss sorted by spec.replicas
// descending, ties broken oldest first, then by name ascending (upstream
// controller.ReplicaSetsBySizeOlder). Proportional scale-downs use it.
func SortBySizeOlder(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	sort.Sort(bySizeOlder(out))
	return out
}

// SortBySizeNewer returns a copy of rss sorted by spec.replicas
// descending, ties broken newest first, then by name descending (upstream
// controller.ReplicaSetsBySizeNewer). Proportional scale-ups use it.
func SortBySizeNewer(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	sort.Sort(bySizeNewer(out))
	return out
}

// SortByRevision returns a copy of rss sorted by revision ascending; a
// missing annotation counts as 0, and equal or unparseable revisions fall
// back to the creation-timestamp order (upstream
// deployment/util.ReplicaSetsByRevision).
func SortByRevision(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	sort.Sort(byRevision(out))
	return out
}
