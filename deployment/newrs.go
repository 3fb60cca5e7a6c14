package deployment

import (
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// findNew locates the new ReplicaSet among the claimed ones (upstream
// FindNewReplicaSet: the oldest whose template equals the Deployment's,
// ignoring the hash label). It runs once per sync, so each ReplicaSet's
// template is compared with the Deployment's at most once.
func (s *syncer) findNew() {
	tpl := &s.d.Spec.Template
	for i, rs := range s.rss {
		if surelyDifferent(tpl, &rs.Spec.Template) {
			continue
		}
		if rollout.EqualIgnoreHash(&rs.Spec.Template, tpl) {
			s.newIdx = i
			s.touch()
			return
		}
	}
}

// newRSAnnotationsCurrent reports, without copying rs, that
// rollout.SetNewReplicaSetAnnotations(d, rs, newRevision, true, …) would
// change nothing: every annotation d propagates is already on rs and rs's
// revision is at least newRevision. False means "maybe", and the caller
// asks rollout. FAST PATH THAT BELONGS IN ROLLOUT (a read-only twin of
// SetNewReplicaSetAnnotations, like ReplicasAnnotationsNeedUpdate).
func newRSAnnotationsCurrent(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64) bool {
	if rs.Annotations == nil {
		return false
	}
	for k, v := range d.Annotations {
		if w, ok := rs.Annotations[k]; !rollout.SkipCopyAnnotation(k) && (!ok || w != v) {
			return false
		}
	}
	rev, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
	return err == nil && rev >= newRevision
}

// surelyDifferent is a cheap necessary condition for template inequality:
// two templates whose containers differ in number, name or image can never
// be EqualIgnoreHash (string fields compare exactly under semantic
// equality, and empty and nil lists count as equal, hence the lengths).
// It only saves the expensive comparison for most old ReplicaSets.
func surelyDifferent(a, b *corev1.PodTemplateSpec) bool {
	ca, cb := a.Spec.Containers, b.Spec.Containers
	if len(ca) != len(cb) {
		return true
	}
	for i := range ca {
		if ca[i].Image != cb[i].Image || ca[i].Name != cb[i].Name {
			return true
		}
	}
	return false
}

// syncNewRS is the existing-ReplicaSet half of upstream getNewReplicaSet:
// bring the new ReplicaSet's annotations and minReadySeconds up to date
// (an Update, after which upstream returns at once), or else sync the
// Deployment's revision annotation and add Progressing=True/
// FoundNewReplicaSet when there is no Progressing condition yet.
func (s *syncer) syncNewRS() {
	rs := s.newRS()
	if rs == nil || s.newRSUpdated {
		return
	}
	maxOld, _ := rollout.MaxRevision(s.olds()) // unparseable revisions are skipped, as upstream
	if rs.Spec.MinReadySeconds == s.d.Spec.MinReadySeconds && newRSAnnotationsCurrent(s.d, rs, maxOld+1) {
		s.syncRevision(rs)
		return
	}
	newRevision := strconv.FormatInt(maxOld+1, 10)
	updated, changed, err := rollout.SetNewReplicaSetAnnotations(s.d, rs, newRevision, true, rollout.MaxRevisionHistoryLength)
	if changed || rs.Spec.MinReadySeconds != s.d.Spec.MinReadySeconds {
		updated.Spec.MinReadySeconds = s.d.Spec.MinReadySeconds
		s.rss[s.newIdx] = updated
		s.touch()
		s.newRSUpdated = true
		s.emit(UpdateReplicaSet{ReplicaSet: updated})
		return
	}
	if err != nil {
		// Upstream gives up on an unparseable revision after copying the
		// Deployment's annotations onto its in-memory copy, and later
		// writes of this sync carry them.
		s.rss[s.newIdx] = updated
		s.touch()
		rs = updated
	}
	s.syncRevision(rs)
}

// syncRevision copies the new ReplicaSet's revision to the Deployment and
// adds Progressing=True/FoundNewReplicaSet if there is no Progressing
// condition yet (the tail of upstream getNewReplicaSet).
func (s *syncer) syncRevision(rs *appsv1.ReplicaSet) {
	s.setRevision(rs.Annotations[revisionAnnotation])
	if rollout.HasProgressDeadline(s.d) && rollout.GetCondition(s.d.Status, appsv1.DeploymentProgressing) == nil {
		s.setStatus(rollout.SetCondition(s.d.Status, rollout.FoundNewReplicaSetCondition(rs.Name, s.now.Time)))
	}
}

// syncOrCreateNewRS is upstream getAllReplicaSetsAndSyncRevision with
// createIfNotExisted=true: sync the new ReplicaSet, or create it.
func (s *syncer) syncOrCreateNewRS() error {
	if s.newRS() != nil {
		s.syncNewRS()
		return nil
	}
	return s.createNewRS()
}

// createNewRS is the create half of upstream getNewReplicaSet.
//
// A ReplicaSet that already holds the chosen name is found in the snapshot
// rather than by a failed create: if it is someone else's or has another
// template, that is a hash collision, and the plan only bumps
// status.collisionCount (upstream's UpdateStatus before it returns the
// AlreadyExists error); the next sync then hashes with the new count.
func (s *syncer) createNewRS() error {
	rs, err := rollout.NewReplicaSet(s.d, s.olds())
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		return err
	}
	revision := rs.Annotations[revisionAnnotation]
	if existing := s.lookup(rs.Name); existing != nil {
		if rollout.IsHashCollision(s.d, existing) {
			s.setStatus(rollout.BumpCollisionCount(s.d.Status))
			return errStop
		}
		// Our own ReplicaSet with our template, not claimed by this sync
		// (upstream's "already exists" branch): use it, with no event and
		// no NewReplicaSetCreated condition.
		s.rss = append(s.rss, existing)
		s.newIdx = len(s.rss) - 1
		s.touch()
		s.setRevision(revision)
		return nil
	}
	create := CreateReplicaSet{ReplicaSet: rs}
	if rollout.HasProgressDeadline(s.d) {
		onFailure := *s.d
		onFailure.Status = rollout.SetCondition(s.d.Status, rollout.NewCondition(appsv1.DeploymentProgressing,
			corev1.ConditionFalse, rollout.ReasonFailedRSCreate, fmt.Sprintf("Failed to create new replica set %q: ", rs.Name), s.now.Time))
		create.OnFailure = &onFailure
	}
	s.emit(create)
	if n := replicas(rs.Spec.Replicas); n > 0 {
		s.event(corev1.EventTypeNormal, rollout.EventScalingReplicaSet, "Scaled up replica set %s from 0 to %d", rs.Name, n)
	}
	s.rss = append(s.rss, rs)
	s.newIdx = len(s.rss) - 1
	s.touch()
	s.setRevision(revision)
	if rollout.HasProgressDeadline(s.d) {
		s.setStatus(rollout.SetCondition(s.d.Status, rollout.CreatedNewReplicaSetCondition(rs.Name, s.now.Time)))
	}
	return nil
}

// lookup returns the ReplicaSet of the namespace snapshot called name.
func (s *syncer) lookup(name string) *appsv1.ReplicaSet {
	for _, rs := range s.namespace {
		if rs != nil && rs.Name == name && rs.Namespace == s.d.Namespace {
			return rs
		}
	}
	return nil
}
