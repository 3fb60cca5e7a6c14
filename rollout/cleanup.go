package rollout

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// Cleanup returns the old ReplicaSets to delete so that d keeps at most
// revisionHistoryLimit of them, in deletion order (upstream
// cleanupDeployment):
//
//   - nothing without a limit ([HasRevisionHistoryLimit]);
//   - only non-nil ReplicaSets without a deletionTimestamp count;
//   - the len − limit lowest revisions ([SortByRevision]) are candidates,
//     and a candidate that still has replicas (spec or status) or whose
//     status is behind its generation is kept — it still uses up its slot,
//     so a younger ReplicaSet does not take its place.
//
// Upstream calls it only when d was complete at the start of the pass
// (rolling and recreate), or when d is paused with no rollback pending.
// Upstream indexes past the end for a negative limit (which validation
// forbids); Cleanup stops at the end of the list.
func Cleanup(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if !HasRevisionHistoryLimit(d) {
		return nil
	}
	n := 0
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			n++
		}
	}
	diff := int32(n) - *d.Spec.RevisionHistoryLimit // int32, as upstream
	if diff <= 0 {
		return nil
	}
	cleanable := make([]*appsv1.ReplicaSet, 0, n)
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	sort.Sort(byRevision(cleanable))
	var out []*appsv1.ReplicaSet
	for i := int32(0); i < diff && int(i) < len(cleanable); i++ {
		rs := cleanable[i]
		if rs.Status.Replicas != 0 || specReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}
