package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// copyAnnotations copies d's annotations, except the skip list, onto rs
// (which must be owned by the caller), creating the map. It reports
// whether anything changed. Upstream copyDeploymentAnnotationsToReplicaSet.
func copyAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	if d == nil {
		return false
	}
	for k, v := range d.Annotations {
		if old, ok := rs.Annotations[k]; skipped(k) || (ok && old == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// copyDeploymentAnnotations returns a copy of rs carrying every annotation
// of d that is not in the skip list (see [SkipCopyAnnotation]), and whether
// any was added or changed (upstream copyDeploymentAnnotationsToReplicaSet).
// Annotations are never removed from the ReplicaSet. The copy always has a
// non-nil annotation map.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, bool) {
	out := cloneRS(rs)
	return out, copyAnnotations(d, out)
}

// cloneRS deep-copies rs; nil becomes an empty ReplicaSet.
func cloneRS(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if rs == nil {
		return &appsv1.ReplicaSet{}
	}
	return rs.DeepCopy()
}

// SetNewReplicaSetAnnotations returns a copy of the new ReplicaSet rs with
// the annotations the controller maintains on it, and whether they changed
// (upstream deployment/util.SetNewReplicaSetAnnotations):
//
//  1. d's annotations are copied, except the skip list;
//  2. the revision annotation is raised to newRevision if it is lower (an
//     empty or missing one counts as 0);
//  3. if rs already had a revision annotation and it was raised (a
//     rollback), the old revision is appended to the revision-history
//     annotation, dropping the oldest entries to stay within historyLimit
//     characters (upstream uses [MaxRevisionHistoryLength]);
//  4. if !exists (rs is about to be created), the desired- and
//     max-replicas annotations are set to D and D + [MaxSurge].
//
// Upstream logs and gives up, reporting no change, when the existing or the
// new revision is not an integer; in that case the copy keeps the
// annotations of step 1, changed is false, and err wraps
// [ErrIgnoredByUpstream]. Errors from MaxSurge are reported the same way.
func SetNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool, historyLimit int) (*appsv1.ReplicaSet, bool, error) {
	out := cloneRS(rs)
	changed, err := setNewReplicaSetAnnotations(d, out, newRevision, exists, historyLimit)
	return out, changed, err
}

// setNewReplicaSetAnnotations is [SetNewReplicaSetAnnotations] on out
// itself, which the caller owns.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, out *appsv1.ReplicaSet, newRevision string, exists bool, historyLimit int) (bool, error) {
	changed := copyAnnotations(d, out)

	oldRevision, had := out.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false, ignored(fmt.Errorf("rollout: ReplicaSet %s/%s: old revision is not an integer: %w", out.Namespace, out.Name, err))
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false, ignored(fmt.Errorf("rollout: new revision is not an integer: %w", err))
	}
	if oldRev < newRev {
		out.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			if h, ok := pushRevisionHistory(out.Annotations[RevisionHistoryAnnotation], oldRevision, historyLimit); ok {
				out.Annotations[RevisionHistoryAnnotation] = h
			}
		}
	}
	if exists {
		return changed, nil
	}
	surge, serr := MaxSurge(d)
	D := desired(d)
	if setReplicasAnnotations(out, D, D+surge) {
		changed = true
	}
	return changed, serr
}

// pushRevisionHistory appends rev to the comma-separated history, dropping
// the oldest entries so the result fits in limit characters. ok is false
// when even dropping everything does not make room (upstream logs and
// leaves the history alone). An empty first entry makes the history just
// rev, as upstream.
func pushRevisionHistory(history, rev string, limit int) (string, bool) {
	entries := strings.Split(history, ",")
	if entries[0] == "" {
		return rev, true
	}
	total := len(history) + len(rev) + 1
	start := 0
	for total > limit && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total > limit {
		return "", false
	}
	kept := make([]string, 0, len(entries)-start+1)
	kept = append(kept, entries[start:]...)
	kept = append(kept, rev)
	return strings.Join(kept, ","), true
}

// setReplicasAnnotations writes the two annotations on rs (owned by the
// caller), creating the map, and reports whether either changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	if s := strconv.FormatInt(int64(desiredReplicas), 10); rs.Annotations[DesiredReplicasAnnotation] != s {
		rs.Annotations[DesiredReplicasAnnotation] = s
		changed = true
	}
	if s := strconv.FormatInt(int64(maxReplicas), 10); rs.Annotations[MaxReplicasAnnotation] != s {
		rs.Annotations[MaxReplicasAnnotation] = s
		changed = true
	}
	return changed
}

// SetReplicasAnnotations returns a copy of rs whose desired-replicas and
// max-replicas annotations are desiredReplicas and maxReplicas (in %d
// form), and whether either changed (upstream SetReplicasAnnotations). The
// copy always has a non-nil annotation map.
func SetReplicasAnnotations(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) (*appsv1.ReplicaSet, bool) {
	out := cloneRS(rs)
	return out, setReplicasAnnotations(out, desiredReplicas, maxReplicas)
}

// ReplicasAnnotationsNeedUpdate is the read-only twin of
// [SetReplicasAnnotations]: true if either annotation differs, or rs has no
// annotation map at all (upstream ReplicasAnnotationsNeedUpdate). It does
// not allocate.
func ReplicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	if rs == nil || rs.Annotations == nil {
		return true
	}
	return !annotationIs(rs.Annotations[DesiredReplicasAnnotation], desiredReplicas) ||
		!annotationIs(rs.Annotations[MaxReplicasAnnotation], maxReplicas)
}

// annotationIs reports whether s is exactly the %d form of n, without
// allocating.
func annotationIs(s string, n int32) bool {
	var buf [12]byte
	return s == string(strconv.AppendInt(buf[:0], int64(n), 10))
}

// nonNegativeInt32Annotation reads annotation key of rs as upstream's
// getNonNegativeInt32FromAnnotation: missing → (0, false, nil); not an
// unsigned 32-bit integer or above MaxInt32 → (0, false, err).
func nonNegativeInt32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool, error) {
	if rs == nil {
		return 0, false, nil
	}
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("rollout: ReplicaSet %s/%s: annotation %s: %w", rs.Namespace, rs.Name, key, err)
	}
	if n > math.MaxInt32 {
		return 0, false, fmt.Errorf("rollout: ReplicaSet %s/%s: annotation %s: value %d is out of range (higher than %d)", rs.Namespace, rs.Name, key, n, math.MaxInt32)
	}
	return int32(n), true, nil
}

// AnnotatedDesiredReplicas reads rs's desired-replicas annotation
// (upstream GetDesiredReplicasAnnotation). ok is false when it is missing
// or invalid; an invalid value (negative, non-numeric, above MaxInt32) is
// also reported in err, which wraps [ErrIgnoredByUpstream] (upstream logs
// it).
func AnnotatedDesiredReplicas(rs *appsv1.ReplicaSet) (n int32, ok bool, err error) {
	n, ok, err = nonNegativeInt32Annotation(rs, DesiredReplicasAnnotation)
	return n, ok, ignored(err)
}

// annotatedMaxReplicas reads rs's max-replicas annotation like
// [AnnotatedDesiredReplicas] (upstream getMaxReplicasAnnotation).
func annotatedMaxReplicas(rs *appsv1.ReplicaSet) (n int32, ok bool, err error) {
	n, ok, err = nonNegativeInt32Annotation(rs, MaxReplicasAnnotation)
	return n, ok, ignored(err)
}

// SetDeploymentAnnotationsTo returns a copy of d prepared for a rollback
// to rs (upstream SetDeploymentAnnotationsTo): of d's annotations only the
// skip-listed ones are kept, then every annotation of rs that is not
// skip-listed is added. The copy always has a non-nil annotation map.
func SetDeploymentAnnotationsTo(d *appsv1.Deployment, rs *appsv1.ReplicaSet) *appsv1.Deployment {
	out := d.DeepCopy()
	if out == nil {
		out = &appsv1.Deployment{}
	}
	out.Annotations = rollbackAnnotations(out.Annotations, rs)
	return out
}

// rollbackAnnotations is the annotation map of SetDeploymentAnnotationsTo
// and of kubectl's undo patch.
func rollbackAnnotations(current map[string]string, rs *appsv1.ReplicaSet) map[string]string {
	out := map[string]string{}
	for k, v := range current {
		if skipped(k) {
			out[k] = v
		}
	}
	if rs != nil {
		for k, v := range rs.Annotations {
			if !skipped(k) {
				out[k] = v
			}
		}
	}
	return out
}
