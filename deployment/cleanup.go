package deployment

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// cleanup is upstream cleanupDeployment; rollout.Cleanup picks the old
// ReplicaSets beyond revisionHistoryLimit. Deleted ReplicaSets leave the
// working set, so the status computed afterwards no longer counts them.
func (s *syncer) cleanup(olds []*appsv1.ReplicaSet) {
	for _, rs := range rollout.Cleanup(s.d, olds) {
		s.emit(DeleteReplicaSet{Key: keyOf(rs), UID: rs.UID})
		if i := s.index(rs); i >= 0 {
			s.rss = append(s.rss[:i:i], s.rss[i+1:]...)
			if s.newIdx > i {
				s.newIdx--
			}
			s.touch()
		}
	}
}
