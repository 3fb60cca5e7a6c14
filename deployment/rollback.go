package deployment

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// rollback is upstream rollback, triggered by the deprecated
// deprecated.deployment.rollback.to annotation (revision 0 = the previous
// one):
//
//   - the new ReplicaSet is synced or created first;
//   - the first ReplicaSet (old ones in creation order, then the new one)
//     with the wanted revision provides the template and annotations,
//     unless its template is already the Deployment's (a Warning
//     DeploymentRollbackTemplateUnchanged event);
//   - no such revision: a Warning DeploymentRollbackRevisionNotFound event;
//   - in every case the annotation is cleared with an Update of the
//     Deployment, followed, after an actual rollback, by a Normal
//     DeploymentRollback event.
//
// The next sync finds (or creates) the ReplicaSet of the restored template
// and gives it a new revision, pushing the old one into its
// revision-history annotation.
func (s *syncer) rollback(revision int64) error {
	if err := s.syncOrCreateNewRS(); err != nil {
		return err
	}
	all := s.all()
	if revision == 0 {
		if revision, _ = rollout.LastRevision(all); revision == 0 {
			s.event(corev1.EventTypeWarning, rollout.EventRollbackRevisionNotFound, "Unable to find last revision.")
			s.clearRollback()
			return nil
		}
	}
	for _, rs := range all {
		v, err := rollout.Revision(rs)
		if err != nil || v != revision {
			continue // unparseable revisions are skipped, as upstream
		}
		same := rs == s.newRS() || rollout.EqualIgnoreHash(&s.d.Spec.Template, &rs.Spec.Template)
		if same {
			s.event(corev1.EventTypeWarning, rollout.EventRollbackTemplateUnchanged,
				"The rollback revision contains the same template as current deployment %q", s.d.Name)
			s.clearRollback()
			return nil
		}
		status := s.d.Status
		d := rollout.SetFromReplicaSetTemplate(s.d, rs.Spec.Template)
		d = rollout.SetDeploymentAnnotationsTo(d, rs)
		d.Status = status
		s.d = d
		s.clearRollback()
		s.event(corev1.EventTypeNormal, rollout.EventRollbackDone, "Rolled back deployment %q to revision %d", s.d.Name, revision)
		return nil
	}
	s.event(corev1.EventTypeWarning, rollout.EventRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	s.clearRollback()
	return nil
}

// clearRollback removes the rollback annotation and writes the Deployment
// (upstream updateDeploymentAndClearRollbackTo).
func (s *syncer) clearRollback() {
	d := s.d.DeepCopy()
	delete(d.Annotations, rollout.RollbackToAnnotation)
	s.d = d
	s.deploymentWritten = true
	out := d.DeepCopy()
	out.Status = s.orig.Status // the main resource ignores status; send what the server has
	s.emit(UpdateDeployment{Deployment: out})
}
